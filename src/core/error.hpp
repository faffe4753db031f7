#pragma once
// Typed errors. Every failure that reaches the user is one of these, carrying one clear line
// that names the cause (file, dataset, shape, option). main() prints it once and exits nonzero.
#include <stdexcept>
#include <string>

namespace tessera {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user: options, files, datasets, shapes.
class InputError : public Error {
 public:
  using Error::Error;
};

// Reading or writing files failed (permissions, full disk, corrupt file).
class IoError : public Error {
 public:
  using Error::Error;
};

// A CUDA runtime / cuBLAS call failed.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// An MPI call failed.
class CommError : public Error {
 public:
  using Error::Error;
};

}  // namespace tessera
