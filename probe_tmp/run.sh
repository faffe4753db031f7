export PATH=$PATH:/usr/local/cuda/bin OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTESSERA_WARNINGS_AS_ERRORS=ON >/dev/null && cmake --build build-gpu -j 32 >/tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
echo "warnings: $(grep -c warning /tmp/build.log)"
build-gpu/tessera info | grep -E 'transport|GPU'
for i in 1 2 3; do /usr/bin/time -f "tessera info alone %e s" build-gpu/tessera info >/dev/null; done
python3 scripts/e2e_bench.py /tmp/ab-16384 --cases 16384 --repeats 3 --tessera build-gpu/tessera --data /tmp/tessera-e2e \
  --nps "0,1" > /tmp/ab.log 2>&1; tail -3 /tmp/ab.log
python3 probe_tmp/summ.py /tmp/ab-16384 | grep -E -- '-1.json'
