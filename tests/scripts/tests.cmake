# Script tests: MPI end to end against numpy, every error case, the configs and the demo.

# Odd and prime shapes, K = 1, 1x1x1, on 1-4 ranks (CPU backend; CI has no GPU).
add_mpi_test(mpi.f64.odd.np1 1 e2e_run.py --m 17 --n 33 --k 9 --dtype f64)
add_mpi_test(mpi.f64.odd.np2 2 e2e_run.py --m 31 --n 29 --k 37 --dtype f64)
add_mpi_test(mpi.f64.odd.np3 3 e2e_run.py --m 101 --n 67 --k 53 --dtype f64 --kernel cpu-tiled)
add_mpi_test(mpi.f64.odd.np4 4 e2e_run.py --m 129 --n 257 --k 65 --dtype f64)
add_mpi_test(mpi.f32.odd.np3 3 e2e_run.py --m 123 --n 45 --k 1027 --dtype f32)
add_mpi_test(mpi.f32.k1.np2 2 e2e_run.py --m 13 --n 7 --k 1 --dtype f32 --kernel cpu-naive)
add_mpi_test(mpi.f64.1x1x1.np4 4 e2e_run.py --m 1 --n 1 --k 1 --dtype f64)
add_mpi_test(mpi.f64.grid2x2.np4 4 e2e_run.py --m 9 --n 10 --k 11 --dtype f64 --grid 2x2)
add_mpi_test(mpi.f64.grid1x3.np4 4 e2e_run.py --m 9 --n 10 --k 11 --dtype f64 --grid 1x3)
add_mpi_test(mpi.f32.chunked.np2 2 e2e_run.py --m 70 --n 90 --k 50 --dtype f32 --layout chunked)
add_mpi_test(mpi.f64.gzip.np3 3 e2e_run.py --m 64 --n 80 --k 96 --dtype f64 --layout gzip)
add_mpi_test(mpi.f64.samefile.np2 2 e2e_run.py --m 20 --n 21 --k 22 --dtype f64 --same-file)
add_mpi_test(mpi.int32.np2 2 e2e_run.py --m 15 --n 16 --k 17 --dtype i32)
add_mpi_test(mpi.f64.baseline.np2 2 e2e_run.py --m 40 --n 50 --k 60 --dtype f64 --baseline cpu-naive)
# Streaming (algorithms/row_streams.hpp): A read in pieces while the GEMM runs, rank 0's C written as it
# comes back. Forced small with TESSERA_STREAM_CHUNKS; more pieces than rows, prime shapes, K = 1.
add_mpi_test(stream.f64.odd.np1 1 e2e_run.py --m 37 --n 29 --k 31 --dtype f64 --stream-chunks 5)
add_mpi_test(stream.f32.odd.np2 2 e2e_run.py --m 61 --n 47 --k 1031 --dtype f32 --stream-chunks 3 --kernel cpu-tiled)
add_mpi_test(stream.f64.many-pieces.np3 3 e2e_run.py --m 7 --n 5 --k 3 --dtype f64 --stream-chunks 50)
add_mpi_test(stream.f64.k1.np2 2 e2e_run.py --m 13 --n 11 --k 1 --dtype f64 --stream-chunks 4 --kernel cpu-naive)
add_mpi_test(stream.f64.grid2x2.np4 4 e2e_run.py --m 29 --n 31 --k 23 --dtype f64 --grid 2x2 --algorithm panels --stream-chunks 3)
add_mpi_test(stream.f32.chunked.np2 2 e2e_run.py --m 70 --n 90 --k 50 --dtype f32 --layout chunked --stream-chunks 4)
add_mpi_test(stream.f64.off.np2 2 e2e_run.py --m 20 --n 21 --k 22 --dtype f64 --stream-chunks 1)
# Ranks left idle (a 1x1 grid of 3 ranks, as the model chooses for small products on GPUs).
add_mpi_test(stream.f64.idle.np3 3 e2e_run.py --m 23 --n 19 --k 17 --dtype f64 --grid 1x1 --stream-chunks 4)

# Staged GEMMs (backend.hpp's StagedProblem): A and B read piece by piece on request, C written as
# it comes back, none of them whole in host memory (the GPU's default where A streams; forced here
# with TESSERA_STAGED=1, in pieces of TESSERA_STAGE_BYTES: one row or less, remainders, K = 1).
add_mpi_test(stage.f64.odd.np1 1 e2e_run.py --m 37 --n 29 --k 31 --dtype f64 --stream-chunks 5 --staged on --stage-bytes 700)
add_mpi_test(stage.f32.odd.np2 2 e2e_run.py --m 61 --n 47 --k 1031 --dtype f32 --stream-chunks 3 --staged on --stage-bytes 5000 --kernel cpu-tiled)
add_mpi_test(stage.f64.k1.np3 3 e2e_run.py --m 13 --n 11 --k 1 --dtype f64 --stream-chunks 4 --staged on --stage-bytes 1)
add_mpi_test(stage.f64.grid2x2.np4 4 e2e_run.py --m 29 --n 31 --k 23 --dtype f64 --grid 2x2 --algorithm panels --stream-chunks 3 --staged on --stage-bytes 200)
add_mpi_test(stage.f64.idle.np3 3 e2e_run.py --m 23 --n 19 --k 17 --dtype f64 --grid 1x1 --stream-chunks 4 --staged on --stage-bytes 300)
add_mpi_test(stage.f32.gzip.np2 2 e2e_run.py --m 70 --n 90 --k 50 --dtype f32 --layout gzip --stream-chunks 4 --staged on --stage-bytes 2000)
add_mpi_test(stage.f64.off.np2 2 e2e_run.py --m 20 --n 21 --k 22 --dtype f64 --stream-chunks 4 --staged off)
# Gathered C needs the whole block on its rank: not staged, even when asked.
add_mpi_test(stage.f64.gather.np2 2 e2e_run.py --m 20 --n 21 --k 22 --dtype f64 --stream-chunks 4 --write gather --staged on --expect-staged no)
add_mpi_test(op.stage.tab.np2 2 op_run.py --m 61 --n 47 --k 53 --ta --tb --alpha 2 --beta -1 --stream-chunks 4 --algorithm panels --staged on --stage-bytes 300)
add_mpi_test(op.stage.f32.np3 3 op_run.py --m 7 --n 5 --k 3 --ta --dtype f32 --beta 1 --stream-chunks 50 --staged on --stage-bytes 1)
add_mpi_test(write.identical.panels.staged.np3 3 write_paths.py --case identical --stream-chunks 5 --staged)
add_mpi_test(fault.write-fails.staged 2 faults.py --case write-fails --stream-chunks 4 --staged)
# B's first rows read ahead (job/read_ahead.hpp; forced here, where no GPU starts): the rows read
# ahead and those read after them, on every algorithm, layout and path.
add_mpi_test(ahead.op.tab.np3 3 op_run.py --m 61 --n 47 --k 53 --ta --tb --alpha 2 --beta -1 --read-ahead)
add_mpi_test(ahead.op.stage.np2 2 op_run.py --m 61 --n 47 --k 53 --ta --tb --alpha 2 --beta -1 --stream-chunks 4 --algorithm panels --staged on --stage-bytes 300 --read-ahead)
add_mpi_test(ahead.op.k1.np2 2 op_run.py --m 13 --n 7 --k 1 --tb --alpha 3 --read-ahead)
add_mpi_test(ahead.gzip.np3 3 e2e_run.py --m 64 --n 80 --k 96 --dtype f64 --layout gzip --read-ahead)
add_mpi_test(ahead.chunked.stage.np1 1 e2e_run.py --m 70 --n 90 --k 50 --dtype f32 --layout chunked --stream-chunks 4 --staged on --stage-bytes 1000 --read-ahead)
add_mpi_test(ahead.summa.np4 4 op_run.py --m 53 --n 59 --k 61 --ta --beta -1 --algorithm summa --read-ahead)
add_mpi_test(ahead.ksplit.np3 3 op_run.py --m 29 --n 31 --k 37 --tb --alpha -2 --algorithm ksplit --read-ahead)
foreach(case staged-nonfinite-a staged-nonfinite-b ahead-nonfinite-b bad-stage-bytes bad-staged bad-mpi-transports bad-gpu-early
        bad-read-ahead)
  add_mpi_test(error.${case} 2 errors.py --case ${case})
endforeach()

# The CUDA backend end to end; skipped (visibly) where fewer GPUs are visible.
add_mpi_test(mpi.cuda.np1 1 e2e_run.py --m 1023 --n 1025 --k 1027 --dtype f32 --backend cuda --need-gpus 1)
add_mpi_test(stream.cuda.f32.np1 1 e2e_run.py --m 1021 --n 1031 --k 1033 --dtype f32 --backend cuda --need-gpus 1 --stream-chunks 6)
add_mpi_test(stream.cuda.f64.np2 2 e2e_run.py --m 257 --n 131 --k 67 --dtype f64 --backend cuda --need-gpus 2 --algorithm panels --stream-chunks 3)
add_mpi_test(stream.cuda.ooc.np1 1 e2e_run.py --m 1000 --n 999 --k 997 --dtype f32 --backend cuda --need-gpus 1 --gpu-memory 3M --stream-chunks 4 --expect-staged no)
# Staged on the GPU (the default where A streams): pieces of one row and of several with
# remainders, through the upload and download rings; whole blocks with TESSERA_STAGED=0.
add_mpi_test(stage.cuda.f32.np1 1 e2e_run.py --m 1021 --n 1031 --k 1033 --dtype f32 --backend cuda --need-gpus 1 --stream-chunks 6 --expect-staged yes)
add_mpi_test(stage.cuda.rows.np1 1 e2e_run.py --m 517 --n 259 --k 131 --dtype f64 --backend cuda --need-gpus 1 --stream-chunks 4 --stage-bytes 2000 --expect-staged yes)
add_mpi_test(stage.cuda.pieces.np1 1 e2e_run.py --m 1021 --n 1031 --k 1033 --dtype f32 --backend cuda --need-gpus 1 --stream-chunks 6 --stage-bytes 100000 --expect-staged yes)
add_mpi_test(stage.cuda.f64.np2 2 e2e_run.py --m 257 --n 131 --k 67 --dtype f64 --backend cuda --need-gpus 2 --algorithm panels --grid 2x1 --stream-chunks 3 --stage-bytes 3000 --expect-staged yes)
add_mpi_test(stage.cuda.idle.np2 2 e2e_run.py --m 1023 --n 1025 --k 1027 --dtype f32 --backend cuda --need-gpus 2 --grid 1x1 --stream-chunks 4 --expect-staged yes)
add_mpi_test(stage.cuda.off.np1 1 e2e_run.py --m 1021 --n 1031 --k 1033 --dtype f32 --backend cuda --need-gpus 1 --stream-chunks 6 --staged off)
add_mpi_test(op.cuda.stage.np1 1 op_run.py --m 517 --n 259 --k 131 --ta --tb --alpha 2 --beta -1 --backend cuda --need-gpus 1 --stream-chunks 4 --stage-bytes 5000)
add_mpi_test(mpi.cuda.np2 2 e2e_run.py --m 517 --n 1031 --k 259 --dtype f64 --backend cuda --need-gpus 2 --baseline naive)
# Ranks left idle on GPUs touch no device and say `idle`: panels on one GPU of two, and summa on a
# 2x1 grid of 3 ranks (NCCL between ranks 0 and 1; the idle rank holds the transport, joins no group).
add_mpi_test(mpi.cuda.idle.np2 2 e2e_run.py --m 1023 --n 1025 --k 1027 --dtype f32 --backend cuda --need-gpus 2 --grid 1x1)
add_mpi_test(summa.cuda.idle.np3 3 e2e_run.py --m 517 --n 259 --k 1031 --dtype f32 --backend cuda --need-gpus 2 --algorithm summa --grid 2x1 --expect-comm nccl)

foreach(case missing-file missing-dataset group-not-dataset not-2d unsupported-dtype odd-float16 inner-dims zero-dim
        output-exists output-dir-missing output-dir-not-writable corrupt-file truncated-file bad-grid-syntax
        grid-too-big unknown-config-key output-is-input bad-dataset-ref unknown-kernel unknown-backend
        report-dir-missing bad-dtype too-large-for-memory bad-gpu-memory bad-algorithm bad-comm summa-verify
        summa-nccl-on-cpu cuda-aware-on-cpu panel-width-with-panels stream-nonfinite stream-nonfinite-idle
        bad-stream-chunks unknown-subcommand verify-zero-vectors verify-beta-c generate-integers-empty)
  add_mpi_test(error.${case} 2 errors.py --case ${case})
endforeach()
# Numbers CLI11 alone took wrongly ('' as 0, nan, inf, -1 as 2^64 - 1), and generate's sizes checked
# up front (a 64-bit count, the free disk space): usage errors exit 2, the size refusals 1.
foreach(case alpha-empty beta-empty alpha-nan beta-inf alpha-garbage alpha-overflow config-alpha-empty
        config-beta-nan verify-alpha-empty generate-rows-negative generate-seed-negative generate-seed-too-large
        generate-high-inf bench-seed-negative generate-wide-row generate-too-many-elements generate-disk-full
        bench-size-too-large)
  add_mpi_test(error.${case} 2 errors.py --case ${case})
endforeach()

# Data safety (docs/reliability.md, "Data safety"): paths checked up front, no input silently
# filled, every refusal before the compute; each case checks every rank's exit status and that
# every file of its folder is byte-identical afterwards.
foreach(case report-onto-input dryrun-report-onto-input report-onto-output report-onto-new-output
        output-onto-elink-source output-onto-vds-source vds-missing-source report-is-directory report-read-only
        report-disk-full output-dangling-symlink long-output-name colon-in-dataset-path dryrun-ranks-negative
        f32-overflow-on-conversion generate-chunk-option cli-bad-number cli-missing-config cli-bad-config-type
        cli-duplicate-config-key cli-unknown-option cli-help-version overflow-warning
        output-hard-link-to-input output-symlink-to-input report-symlink-to-input report-onto-other-file
        report-replaces-report report-to-pipe config-as-report config-as-output input-named-like-a-leftover
        verify-vds-missing-source chunks-never-written chunks-declared-fill contiguous-never-written
        external-raw-file-short external-raw-file-as-output vds-unmapped-region vds-source-too-small
        generate-onto-symlink generate-onto-existing tune-out-onto-input bench-json-onto-input
        bench-json-and-csv-one-file generate-wide-rows)
  add_mpi_test(safety.${case} 2 safety.py --case ${case})
endforeach()

foreach(cfg demo workstation)
  add_mpi_test(config.${cfg} 2 config_run.py --config configs/${cfg}.toml)
endforeach()

# The README's demo command, as written (setup is a no-op once installed; the build is reused).
add_test(NAME readme.demo COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/demo.sh)
# RUN_SERIAL: demo.sh builds in this build folder, which no other test may run from meanwhile.
set_tests_properties(readme.demo PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE
  ENVIRONMENT "TESSERA_BUILD_DIR=${PROJECT_BINARY_DIR};TESSERA_DEMO_SIZE=512;TESSERA_DEMO_DIR=${CMAKE_CURRENT_BINARY_DIR}/demo-work;OMPI_MCA_btl_vader_single_copy_mechanism=none")
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/demo-work)
# The README's five-minute tour, every command as written, against this build.
tessera_script_test(readme.tour readme_tour.py)
set_tests_properties(readme.tour PROPERTIES PROCESSORS 2 LABELS mpi)

# Faults: a rank killed mid-run, the writer killed, a failing write.
foreach(case rank-killed writer-killed write-fails)
  add_mpi_test(fault.${case} 2 faults.py --case ${case})
endforeach()
# summa: the surviving rank waits in a panel broadcast when its peer dies.
foreach(case rank-killed)
  add_mpi_test(fault.summa.${case} 2 faults.py --case ${case} --algorithm summa)
endforeach()
# The output disk fills while rank 0 writes its C rows during the GEMM (streaming).
add_mpi_test(fault.write-fails.streamed 2 faults.py --case write-fails --stream-chunks 4)
# A rank that cannot join the NCCL group ends the job (2 GPUs; skipped, visibly, with fewer).
add_mpi_test(fault.summa.nccl-join-fails 2 faults.py --case nccl-join-fails --algorithm summa)
add_mpi_test(fault.ksplit.nccl-join-fails 2 faults.py --case nccl-join-fails --algorithm ksplit)

# Verification: run --verify, a planted wrong element caught, non-finite inputs.
foreach(dtype f32 f64)
  add_mpi_test(verify.planted-error.${dtype} 3 verify_cases.py --case planted-error --dtype ${dtype})
endforeach()
add_mpi_test(verify.run-verify.np4 4 verify_cases.py --case verified-run)
add_mpi_test(verify.nonfinite.np2 2 verify_cases.py --case nonfinite --dtype f64)

# Dry run: any rank count without launching; predicted memory vs a real run's peak.
add_mpi_test(dryrun.memory.np2 2 dryrun.py --case memory)
add_mpi_test(dryrun.many-ranks 1 dryrun.py --case many-ranks)
add_mpi_test(dryrun.memory.summa.np4 4 dryrun.py --case memory --algorithm summa)
add_mpi_test(dryrun.memory.ksplit.np3 3 dryrun.py --case memory --algorithm ksplit)

# 3 busy ranks (3x1) on the 2-GPU machine: two share a GPU, and the report says so (skipped below 2 GPUs).
add_mpi_test(mpi.cuda.shared.np3 3 e2e_run.py --m 300 --n 301 --k 302 --dtype f32 --backend cuda --need-gpus 2 --grid 3x1 --expect-shared-gpu)

# ksplit: the ranks split K and sum partial products (MPI_Reduce on the CPU; NCCL on GPUs).
# Odd shapes, K < ranks (ranks with an empty K range contribute zeros), f32 and f64, 1-4 ranks.
add_mpi_test(ksplit.f64.odd.np1 1 e2e_run.py --m 17 --n 33 --k 9 --dtype f64 --algorithm ksplit)
add_mpi_test(ksplit.f64.odd.np2 2 e2e_run.py --m 31 --n 29 --k 37 --dtype f64 --algorithm ksplit)
add_mpi_test(ksplit.f32.odd.np3 3 e2e_run.py --m 123 --n 45 --k 1027 --dtype f32 --algorithm ksplit --kernel cpu-tiled)
add_mpi_test(ksplit.f64.odd.np4 4 e2e_run.py --m 129 --n 257 --k 65 --dtype f64 --algorithm ksplit --kernel cpu-naive)
add_mpi_test(ksplit.f64.k-lt-p.np4 4 e2e_run.py --m 13 --n 11 --k 2 --dtype f64 --algorithm ksplit)
add_mpi_test(ksplit.f32.k1.np3 3 e2e_run.py --m 7 --n 5 --k 1 --dtype f32 --algorithm ksplit)
add_mpi_test(ksplit.f32.chunked.np2 2 e2e_run.py --m 70 --n 90 --k 50 --dtype f32 --layout chunked --algorithm ksplit)
add_mpi_test(ksplit.int32.np3 3 e2e_run.py --m 15 --n 16 --k 17 --dtype i32 --algorithm ksplit)
# C in row bands, each summed by reduce-scatter and written by the ranks (TESSERA_BANDS forces what
# the model keeps for large C): odd M pads the last band; more bands than M allows are cut down.
add_mpi_test(ksplit.bands.f64.np3 3 e2e_run.py --m 31 --n 29 --k 37 --dtype f64 --algorithm ksplit --bands 3)
add_mpi_test(ksplit.bands.f32.np2 2 e2e_run.py --m 7 --n 45 --k 1027 --dtype f32 --algorithm ksplit --bands 50)
add_mpi_test(ksplit.gather.f64.np3 3 e2e_run.py --m 31 --n 29 --k 37 --dtype f64 --algorithm ksplit --write gather)
# auto on the CPU backend stays panels.
add_mpi_test(ksplit.auto-cpu-is-panels.np2 2 e2e_run.py --m 20 --n 20 --k 40 --dtype f64 --algorithm auto --expect-algorithm panels)
# On GPUs (NCCL where built with it); skipped (visibly) where fewer GPUs are visible.
add_mpi_test(ksplit.cuda.f32.np2 2 e2e_run.py --m 517 --n 1031 --k 1029 --dtype f32 --backend cuda --need-gpus 2 --algorithm ksplit)
# K_r >= 2048 on each rank: the partial product runs in 4 chunks of K, uploads overlapping kernels.
add_mpi_test(ksplit.cuda.f32.chunked.np2 2 e2e_run.py --m 300 --n 301 --k 4099 --dtype f32 --backend cuda --need-gpus 2 --algorithm ksplit)
add_mpi_test(ksplit.cuda.f64.k-lt-p.np2 2 e2e_run.py --m 65 --n 33 --k 1 --dtype f64 --backend cuda --need-gpus 2 --algorithm ksplit)

# summa: 2-D blocks, panels of K broadcast along grid rows and columns. Odd and prime shapes,
# 1-4 ranks and 1-D and 2-D grids, narrow panels (many of them, straddling the owners' K ranges),
# K = 1 and K < grid side (ranks with no K columns), 1x1x1, more ranks than blocks.
add_mpi_test(summa.f64.odd.np1 1 e2e_run.py --m 17 --n 33 --k 9 --dtype f64 --algorithm summa --expect-comm none)
add_mpi_test(summa.f64.odd.np2 2 e2e_run.py --m 31 --n 29 --k 37 --dtype f64 --algorithm summa --panel-width 5 --expect-comm host)
add_mpi_test(summa.f32.odd.np3 3 e2e_run.py --m 123 --n 45 --k 1027 --dtype f32 --algorithm summa --kernel cpu-tiled)
add_mpi_test(summa.f64.grid2x2.np4 4 e2e_run.py --m 129 --n 257 --k 67 --dtype f64 --algorithm summa --grid 2x2 --panel-width 7)
add_mpi_test(summa.f64.grid1x3.np4 4 e2e_run.py --m 9 --n 10 --k 11 --dtype f64 --algorithm summa --grid 1x3 --panel-width 2)
add_mpi_test(summa.f64.grid3x1.np3 3 e2e_run.py --m 37 --n 41 --k 43 --dtype f64 --algorithm summa --grid 3x1 --kernel cpu-naive)
add_mpi_test(summa.f64.k1.np4 4 e2e_run.py --m 13 --n 7 --k 1 --dtype f64 --algorithm summa --grid 2x2)
add_mpi_test(summa.f32.k-lt-side.np4 4 e2e_run.py --m 13 --n 11 --k 2 --dtype f32 --algorithm summa --grid 1x4)
add_mpi_test(summa.f64.1x1x1.np4 4 e2e_run.py --m 1 --n 1 --k 1 --dtype f64 --algorithm summa)
add_mpi_test(summa.f32.chunked.np2 2 e2e_run.py --m 70 --n 90 --k 50 --dtype f32 --layout chunked --algorithm summa --panel-width 16)
add_mpi_test(summa.int32.np3 3 e2e_run.py --m 15 --n 16 --k 17 --dtype i32 --algorithm summa)
# C blocks in row bands, each written while the next computes (B's panels broadcast again per band).
add_mpi_test(summa.bands.f64.grid2x2.np4 4 e2e_run.py --m 129 --n 257 --k 67 --dtype f64 --algorithm summa --grid 2x2 --panel-width 7 --bands 3)
add_mpi_test(summa.bands.f32.np3 3 e2e_run.py --m 40 --n 45 --k 50 --dtype f32 --algorithm summa --bands 100)
add_mpi_test(summa.gather.f64.grid2x2.np4 4 e2e_run.py --m 29 --n 31 --k 23 --dtype f64 --algorithm summa --grid 2x2 --write gather --bands 3)
# auto on a 2-D grid of CPU ranks is summa (a 1-D one stays panels, above).
add_mpi_test(summa.auto-2d-cpu.np4 4 e2e_run.py --m 40 --n 40 --k 40 --dtype f64 --algorithm auto --expect-algorithm summa)
# On GPUs: NCCL broadcasts (auto) and host-staged MPI, f32 and f64, a shared GPU (host path).
add_mpi_test(summa.cuda.f32.np2 2 e2e_run.py --m 517 --n 1031 --k 1029 --dtype f32 --backend cuda --need-gpus 2 --algorithm summa --panel-width 100 --expect-comm nccl)
add_mpi_test(summa.cuda.f64.host.np2 2 e2e_run.py --m 257 --n 129 --k 1031 --dtype f64 --backend cuda --need-gpus 2 --algorithm summa --comm host --panel-width 64 --expect-comm host)
add_mpi_test(summa.cuda.f32.np1 1 e2e_run.py --m 300 --n 301 --k 302 --dtype f32 --backend cuda --need-gpus 1 --algorithm summa --panel-width 50)
add_mpi_test(summa.cuda.shared.np3 3 e2e_run.py --m 301 --n 302 --k 303 --dtype f32 --backend cuda --need-gpus 2 --algorithm summa --expect-shared-gpu --expect-comm host)
add_mpi_test(summa.cuda.f64.grid2x2.np4 4 e2e_run.py --m 131 --n 137 --k 139 --dtype f64 --backend cuda --need-gpus 2 --algorithm summa --grid 2x2 --panel-width 16 --expect-shared-gpu)

# Out of core: a GPU memory limit far below the block's needs; tiles streamed through the GPU.
add_mpi_test(mpi.cuda.outofcore.f32.np1 1 e2e_run.py --m 300 --n 301 --k 302 --dtype f32 --backend cuda --need-gpus 1 --gpu-memory 400K)
add_mpi_test(mpi.cuda.outofcore.f64.np2 2 e2e_run.py --m 257 --n 129 --k 1031 --dtype f64 --backend cuda --need-gpus 2 --gpu-memory 1.5M)

# How C reaches the file (job/output.hpp): in place on every rank vs the gather through rank 0.
add_mpi_test(write.identical.panels.np2 2 write_paths.py --case identical)
add_mpi_test(write.identical.panels.np3 3 write_paths.py --case identical)
add_mpi_test(write.identical.panels.stream.np4 4 write_paths.py --case identical --stream-chunks 7)
add_mpi_test(write.identical.summa.np1 1 write_paths.py --case identical --algorithm summa)
add_mpi_test(write.identical.summa.np4 4 write_paths.py --case identical --algorithm summa)
add_mpi_test(write.unshared-fallback.np2 2 write_paths.py --case unshared)
add_mpi_test(write.rank-killed-writing.np2 2 write_paths.py --case killed-writing)
set_tests_properties(write.rank-killed-writing.np2 PROPERTIES LABELS "mpi;fault")

# Each rank's share of the node's cores when the launcher bound it to fewer (comm/cpu_share.hpp).
add_mpi_test(cpu-share.np1 1 cpu_share.py)

# C into an existing HDF5 file (#17 item 1): other datasets byte-identical after a run, after
# --overwrite and after a rank killed mid-compute (rank 0 rolls the file back, #27); in place
# and gathered, 1-3 ranks. The attributes read back as str in h5py (item 3).
add_mpi_test(existing.add.np1 1 existing_file.py --case add)
add_mpi_test(existing.add.gather.np2 2 existing_file.py --case add --write gather)
add_mpi_test(existing.add.summa.np3 3 existing_file.py --case add --algorithm summa --write in-place)
add_mpi_test(existing.killed.np1 1 existing_file.py --case killed)
add_mpi_test(existing.killed.np2 2 existing_file.py --case killed --write in-place)
add_mpi_test(existing.killed.gather.np3 3 existing_file.py --case killed --write gather)
set_tests_properties(existing.killed.np1 existing.killed.np2 existing.killed.gather.np3 PROPERTIES LABELS "mpi;fault")

# Crash safety of an existing output file (#27, tests/scripts/crash_sweep.py): rank 0 stopped
# before each of its writes in turn (SIGKILL, then `tessera recover` or the next run; SIGTERM /
# SIGINT; a simulated full disk), 1 and 3 ranks; after each the file holds every earlier object
# unchanged and either no new C (byte-identical) or the complete C with its attributes.
foreach(_case new overwrite beta leftover latest batch window window-gzip compressed half)
  add_mpi_test(crash.kill.${_case}.np1 1 crash_sweep.py --case ${_case} --stop kill)
  add_mpi_test(crash.enospc.${_case}.np1 1 crash_sweep.py --case ${_case} --stop enospc)
  set_tests_properties(crash.kill.${_case}.np1 crash.enospc.${_case}.np1 PROPERTIES LABELS "mpi;fault;crash")
endforeach()
# On 3 ranks (~40 s each on 2 cores: rank 0 stopped while the others write their rows in place):
# a new dataset, --beta, a window of C and a compressed C (every rank compresses its own chunks)
# killed, a new dataset signalled, --beta on a full disk.
foreach(_case new beta window compressed)
  add_mpi_test(crash.kill.${_case}.np3 3 crash_sweep.py --case ${_case} --stop kill)
  set_tests_properties(crash.kill.${_case}.np3 PROPERTIES LABELS "mpi;fault;crash")
endforeach()
foreach(_sig TERM INT)
  add_mpi_test(crash.${_sig}.overwrite.np1 1 crash_sweep.py --case overwrite --stop ${_sig})
  set_tests_properties(crash.${_sig}.overwrite.np1 PROPERTIES LABELS "mpi;fault;crash")
endforeach()
add_mpi_test(crash.TERM.new.np3 3 crash_sweep.py --case new --stop TERM)
add_mpi_test(crash.TERM.window.np1 1 crash_sweep.py --case window --stop TERM)
set_tests_properties(crash.TERM.window.np1 PROPERTIES LABELS "mpi;fault;crash")
set_tests_properties(crash.TERM.new.np3 PROPERTIES LABELS "mpi;fault;crash")
add_mpi_test(crash.enospc.beta.np3 3 crash_sweep.py --case beta --stop enospc)
set_tests_properties(crash.enospc.beta.np3 PROPERTIES LABELS "mpi;fault;crash")
# Inputs through the HDF5 filters of h5py and hdf5plugin pipelines (#31 item 3): LZF, LZ4, bzip2,
# Blosc, ZFP (lossless); a filter that cannot be loaded is refused naming it.
add_mpi_test(io.filters 1 filters.py)
# Filter pipelines in any order (issue 40): deflate-then-shuffle, deflate twice, shuffle around
# deflate, with fletcher32 and LZF; tessera's chunk reader (1 and 4 threads) against numpy.
add_mpi_test(io.filter-order 1 filter_order.py)

# Two writers of one file (HDF5's locking on and off), a full disk (a real small tmpfs: root),
# refusals that leave the output byte for byte as it was (tests/scripts/writers.py).
foreach(_case two-writers full-disk refused-readonly)
  add_mpi_test(crash.${_case} 1 writers.py --case ${_case})
  set_tests_properties(crash.${_case} PROPERTIES LABELS "mpi;fault;crash")
endforeach()

# JSON Schemas (docs/schema/, #17 item 5): every JSON tessera writes validates against its schema.
add_mpi_test(schema.run.np2 2 schemas.py --case run)
add_mpi_test(schema.dry-run 1 schemas.py --case dry-run)
add_mpi_test(schema.bench 1 schemas.py --case bench)
add_mpi_test(schema.info.np2 2 schemas.py --case info)
add_mpi_test(schema.tune-files 1 schemas.py --case tune-files)
# Provenance (issue #31 item 5): the report's and C's attributes (read with h5py): inputs' identities,
# working directory, variables in force, git id, Slurm job id, typed options.
add_mpi_test(provenance.np2 2 provenance.py)

# Logging and progress (#17 item 6): -v/--log-level, progress with percentage and ETA on a terminal
# (a pty), auto turning it on for a run longer than predicted.
add_mpi_test(log.verbose.np2 2 log_progress.py --case verbose)
add_mpi_test(log.level.np2 2 log_progress.py --case log-level)
add_mpi_test(progress.terminal.np2 2 log_progress.py --case progress-terminal)
add_mpi_test(progress.batch.np2 2 log_progress.py --case progress-batch)

# C = alpha op(A) op(B) + beta C_old (--transpose-a/-b, --alpha, --beta; op_run.py): transposes
# alone and together, alpha and beta (beta != 0 over an existing C, alpha = 0), K = 1, 1x1x1, odd
# and prime shapes, on 1-4 ranks, every algorithm, streamed A, C gathered, C in bands.
add_mpi_test(op.ta.np1 1 op_run.py --m 17 --n 33 --k 9 --ta)
add_mpi_test(op.tb.np2 2 op_run.py --m 31 --n 29 --k 37 --tb)
add_mpi_test(op.tab.np3 3 op_run.py --m 101 --n 67 --k 53 --ta --tb)
add_mpi_test(op.tab.f32.np4 4 op_run.py --m 61 --n 47 --k 131 --ta --tb --dtype f32 --alpha -1.5 --beta 0.25)
add_mpi_test(op.alpha.np2 2 op_run.py --m 23 --n 19 --k 29 --alpha 2.5)
add_mpi_test(op.beta.np2 2 op_run.py --m 23 --n 19 --k 29 --beta -0.5)
add_mpi_test(op.alpha0.np3 3 op_run.py --m 13 --n 11 --k 7 --ta --alpha 0 --beta 1.5)
add_mpi_test(op.k1.np2 2 op_run.py --m 13 --n 7 --k 1 --ta --tb --alpha 3 --beta 2)
add_mpi_test(op.1x1x1.np4 4 op_run.py --m 1 --n 1 --k 1 --ta --tb --alpha 2 --beta 3)
add_mpi_test(op.row.np2 2 op_run.py --m 1 --n 37 --k 41 --ta --tb --beta 1)
add_mpi_test(op.col.np2 2 op_run.py --m 37 --n 1 --k 41 --ta --tb --beta 1)
foreach(alg panels summa ksplit)
  add_mpi_test(op.${alg}.tab.np2 2 op_run.py --m 41 --n 43 --k 47 --ta --tb --alpha 0.5 --beta 2 --algorithm ${alg})
  add_mpi_test(op.${alg}.ta.np4 4 op_run.py --m 53 --n 59 --k 61 --ta --beta -1 --algorithm ${alg})
  add_mpi_test(op.${alg}.tb.np3 3 op_run.py --m 29 --n 31 --k 37 --tb --alpha -2 --algorithm ${alg})
  add_mpi_test(op.${alg}.gather.np3 3 op_run.py --m 29 --n 31 --k 37 --ta --tb --alpha 1.25 --beta 0.75 --algorithm ${alg} --write gather)
  add_mpi_test(op.${alg}.f32.np2 2 op_run.py --m 67 --n 71 --k 73 --ta --dtype f32 --beta 0.5 --algorithm ${alg})
endforeach()
add_mpi_test(op.summa.bands.np4 4 op_run.py --m 67 --n 71 --k 73 --ta --tb --beta 0.5 --algorithm summa --bands 3)
add_mpi_test(op.ksplit.bands.np3 3 op_run.py --m 67 --n 71 --k 73 --ta --tb --beta 0.5 --algorithm ksplit --bands 3)
# Streamed A (its rows read from the stored transpose's columns) and C written while computed.
add_mpi_test(op.stream.ta.np1 1 op_run.py --m 37 --n 29 --k 31 --ta --beta 0.5 --stream-chunks 4 --algorithm panels)
add_mpi_test(op.stream.tab.np2 2 op_run.py --m 61 --n 47 --k 53 --ta --tb --alpha 2 --beta -1 --stream-chunks 4 --algorithm panels)
add_mpi_test(op.stream.f32.np3 3 op_run.py --m 7 --n 5 --k 3 --ta --dtype f32 --beta 1 --stream-chunks 50)
add_mpi_test(op.stream.gather.np2 2 op_run.py --m 41 --n 23 --k 19 --ta --tb --beta 2 --stream-chunks 4 --write gather --algorithm panels)
# Refusals, on every rank, before any compute; the old C untouched.
foreach(case beta-no-c beta-no-dataset beta-wrong-shape beta-no-overwrite nan-in-old-c)
  add_mpi_test(error.op.${case} 2 op_run.py --m 9 --n 8 --k 7 --ta --beta 1 --case ${case})
endforeach()
add_mpi_test(error.op.transposed-mismatch 2 op_run.py --m 9 --n 8 --k 7 --ta --case transposed-mismatch)
# The CUDA backend: skipped (visibly) where fewer GPUs are visible.
add_mpi_test(op.cuda.tab.np1 1 op_run.py --m 1021 --n 1031 --k 1033 --ta --tb --dtype f32 --alpha 2 --beta 0.5 --backend cuda --need-gpus 1)
add_mpi_test(op.cuda.stream.np1 1 op_run.py --m 517 --n 259 --k 131 --ta --beta -1 --backend cuda --need-gpus 1 --stream-chunks 4)
foreach(alg panels summa ksplit)
  add_mpi_test(op.cuda.${alg}.np2 2 op_run.py --m 517 --n 259 --k 1031 --ta --tb --alpha 0.5 --beta 2 --backend cuda --need-gpus 2 --algorithm ${alg})
endforeach()
add_mpi_test(op.cuda.gather.np2 2 op_run.py --m 257 --n 131 --k 67 --tb --beta 1 --backend cuda --need-gpus 2 --write gather --algorithm summa)
add_mpi_test(op.tb.pieces.np1 1 op_run.py --m 2 --n 3001 --k 2999 --tb --beta 1)  # op(B) read in two pieces of ~64 MiB

# --repeat N --warmup W (#17 item 5; repeat_run.py): the whole job W + N times in one launch, C right
# after every run, the report's spread of the counted runs (validated against its schema); into an
# existing file (the other datasets byte-identical); the refusals, on every rank, before any read.
add_mpi_test(repeat.product.np2 2 repeat_run.py --case product --m 31 --n 29 --k 37)
add_mpi_test(repeat.product.summa.np3 3 repeat_run.py --case product --m 101 --n 67 --k 53 --algorithm summa)
add_mpi_test(repeat.product.f32.np3 3 repeat_run.py --case product --m 23 --n 45 --k 1027 --dtype f32)
add_mpi_test(repeat.defaults.np2 2 repeat_run.py --case defaults --m 13 --n 11 --k 7)
add_mpi_test(repeat.existing.np2 2 repeat_run.py --case existing --m 61 --n 47 --k 53)
add_mpi_test(repeat.existing.gather.np3 3 repeat_run.py --case existing --m 17 --n 19 --k 23 --write gather)
# On GPUs (skip visibly without them): the whole job three times on each GPU, panels and ksplit.
add_mpi_test(repeat.cuda.np1 1 repeat_run.py --case product --m 517 --n 259 --k 1031 --dtype f32 --backend cuda --need-gpus 1)
add_mpi_test(repeat.cuda.ksplit.np2 2 repeat_run.py --case product --m 257 --n 131 --k 1031 --backend cuda --need-gpus 2 --algorithm ksplit)
foreach(case repeat-zero repeat-negative warmup-negative repeat-beta warmup-beta)
  add_mpi_test(error.repeat.${case} 2 repeat_run.py --case ${case} --m 9 --n 8 --k 7)
endforeach()

# What a run costs before it reads (issue 39): the setup phase of a 1-rank CPU run under 50 ms,
# alone on the machine so that the other tests' load does not time it.
add_mpi_test(startup.setup-phase 1 setup_cost.py)
set_tests_properties(startup.setup-phase PROPERTIES RUN_SERIAL TRUE)

# Paths another user or a mistake can put in tessera's way: journals beside inputs, foreign or
# world-writable journals, fifos and devices as inputs, journals and configs (issue 40).
tessera_script_test(safety.hostile-paths hostile_paths.py)
tessera_script_test(safety.journal-trust journal_trust.py)

# Fencing and liveness (issue 40): the run's token (the new file's temporary, the existing file's
# journal) gone while the ranks hold before their C writes: no rank writes C; a rank left waiting
# in MPI for a held peer ends itself within --timeout, its output rolled back.
foreach(case fenced-new fenced-existing watchdog watchdog-existing)
  add_mpi_test(fault.${case} 2 faults.py --case ${case})
endforeach()

# Windows of the inputs, FILE:/A[r0:r1, c0:c1] (issue 43 item 3; slices.py): contiguous and gzip,
# transposed windows, 1-3 ranks; a window outside the dataset and a step refused.
# Half-precision inputs read widened to float32 (issue 43 item 1's reading side; half_inputs.py).
add_mpi_test(half.float16.np1 1 half_inputs.py)
add_mpi_test(half.float16.gzip.f64.np2 2 half_inputs.py --layout gzip --dtype f64)
add_mpi_test(half.bfloat16.np2 2 half_inputs.py --store bfloat16)
add_mpi_test(half.bfloat16.gzip.np3 3 half_inputs.py --store bfloat16 --layout gzip)
add_mpi_test(half.float16.slice.np2 2 half_inputs.py --slice)
add_mpi_test(half.bfloat16.slice.np3 3 half_inputs.py --store bfloat16 --slice)
add_mpi_test(half.float16.big.np1 1 half_inputs.py --big)
add_mpi_test(half.e5m10-bias14.np2 2 half_inputs.py --store e5m10-bias14)
add_mpi_test(half.cuda.e5m10-bias14.np1 1 half_inputs.py --store e5m10-bias14 --backend cuda --need-gpus 1)
add_mpi_test(half.bfloat16.big.slice.np1 1 half_inputs.py --store bfloat16 --big --slice)
# On a GPU, `auto` multiplies half data on the tensor cores (cublas-f16 / -bf16), and not with alpha != 1.
add_mpi_test(half.cuda.float16.np1 1 half_inputs.py --backend cuda --need-gpus 1)
add_mpi_test(half.cuda.bfloat16.slice.np2 2 half_inputs.py --store bfloat16 --slice --backend cuda --need-gpus 1)
add_mpi_test(half.cuda.float16.gzip.f64.np1 1 half_inputs.py --layout gzip --dtype f64 --backend cuda --need-gpus 1)
# Staged: on a GPU the tensor-core kernel's A and B are read and uploaded as stored (2 bytes an
# element: no widening, half the copies); transposed (--slice) or float64 products widen as before.
add_mpi_test(half.staged.float16.np1 1 half_inputs.py --staged)
add_mpi_test(half.staged.bfloat16.gzip.np2 2 half_inputs.py --staged --store bfloat16 --layout gzip)
add_mpi_test(half.cuda.staged.float16.np1 1 half_inputs.py --staged --backend cuda --need-gpus 1)
add_mpi_test(half.cuda.staged.bfloat16.gzip.np1 1 half_inputs.py --staged --store bfloat16 --layout gzip --backend cuda --need-gpus 1)
add_mpi_test(half.cuda.staged.float16.slice.np1 1 half_inputs.py --staged --slice --backend cuda --need-gpus 1)
add_mpi_test(half.cuda.staged.float16.f64.np1 1 half_inputs.py --staged --dtype f64 --backend cuda --need-gpus 1)
# Complex datasets as h5py stores them (issue 43 item 2; complex_run.py): every op (N, T, H),
# complex alpha and beta, every algorithm, in place / gathered / compressed C, a window of C, 1-4 ranks; the
# refusals (real with complex, a complex alpha on real data, --c-dtype, an own kernel).
add_mpi_test(complex.run.c128.np1 1 complex_run.py)
add_mpi_test(complex.run.c64.np2 2 complex_run.py --store complex64)
add_mpi_test(complex.run.c128.np3 3 complex_run.py)
add_mpi_test(complex.run.c64.np4 4 complex_run.py --store complex64)
add_mpi_test(complex.refusals.np2 2 complex_run.py --case refusals)
add_mpi_test(complex.run.cuda.c64.np1 1 complex_run.py --store complex64 --backend cuda --need-gpus 1)
# C stored as float16 / bfloat16 (--c-dtype; half_output.py): bit-exact against numpy's rounding of
# the float32 C on every route (in place, gathered, gzip, into an existing file), 1-3 ranks; overflow.
add_mpi_test(half.out.float16.np1 1 half_output.py)
add_mpi_test(half.out.float16.np3 3 half_output.py)
add_mpi_test(half.out.bfloat16.np2 2 half_output.py --store bfloat16)
add_mpi_test(half.out.overflow.np2 2 half_output.py --case overflow)
# On a GPU the staged GEMM rounds C to 16 bits itself (StagedProblem::c_rounded): the same bits.
add_mpi_test(half.out.cuda.float16.np1 1 half_output.py --backend cuda --need-gpus 1)
add_mpi_test(half.out.cuda.bfloat16.np1 1 half_output.py --store bfloat16 --backend cuda --need-gpus 1)
add_mpi_test(half.out.cuda.float16.np2 2 half_output.py --backend cuda --need-gpus 1)
add_mpi_test(half.out.cuda.overflow.np1 1 half_output.py --case overflow --backend cuda --need-gpus 1)
# One matrix of a 3-D dataset, FILE:/A[i] (issue 42 item 2's reading side; batch_inputs.py).
add_mpi_test(batch.contiguous.np1 1 batch_inputs.py)
add_mpi_test(batch.gzip.ta.np3 3 batch_inputs.py --layout gzip --ta)
add_mpi_test(batch.manifest.np2 2 batch_inputs.py --case manifest --layout gzip)
add_mpi_test(batch.manifest-3d.np3 3 batch_inputs.py --case manifest-3d)
add_mpi_test(batch.manifest-3d.gzip.np1 1 batch_inputs.py --case manifest-3d --layout gzip)
add_mpi_test(batch.stacked.np1 1 batch_inputs.py --case stacked)
add_mpi_test(batch.stacked.gzip.np3 3 batch_inputs.py --case stacked --layout gzip)
add_mpi_test(batch.stacked-beta.np2 2 batch_inputs.py --case stacked-beta)
add_mpi_test(batch.stacked.hdf5.np2 2 batch_inputs.py --case stacked-beta)  # HDF5 writes the 3-D C (gathered)
set_property(TEST batch.stacked.hdf5.np2 APPEND PROPERTY ENVIRONMENT "TESSERA_HDF5_DIRECT=0")
foreach(case no-index outside 2d-index transposed-batch batch-window)
  add_mpi_test(error.batch.${case} 2 batch_inputs.py --case ${case})
endforeach()
add_mpi_test(slice.contiguous.np1 1 slices.py)
add_mpi_test(slice.gzip.tab.np3 3 slices.py --layout gzip --ta --tb)
add_mpi_test(slice.ta.np2 2 slices.py --ta)
foreach(case outside step)
  add_mpi_test(error.slice.${case} 2 slices.py --case ${case})
endforeach()
# C into a window of an existing dataset, or one matrix of a 3-D one, in place (issue 43 item 3;
# c_windows.py): contiguous, gzip-chunked and float32 (rank 0's HDF5 writes through the journal),
# 1-4 ranks, alpha and beta; the refusals leave the file byte for byte as it was.
add_mpi_test(cwindow.contiguous.np1 1 c_windows.py)
add_mpi_test(cwindow.contiguous.np4 4 c_windows.py)
add_mpi_test(cwindow.gzip.np3 3 c_windows.py --layout gzip)
add_mpi_test(cwindow.f32.gather.np2 2 c_windows.py --layout f32 --write gather)
add_mpi_test(cwindow.matrix.np2 2 c_windows.py --case matrix)
add_mpi_test(cwindow.matrix.gzip.np1 1 c_windows.py --case matrix --layout gzip)
add_mpi_test(error.cwindow.np2 2 c_windows.py --case refusals)

# Chunked and compressed C (issue 43 item 4; compressed_c.py): gzip, lz4 and zstd by tessera's threads
# (lz4 and zstd also with no plugin in tessera's reach; each also by HDF5, TESSERA_HDF5_DIRECT=0), bzip2
# through HDF5's plugin, with shuffle, chunks that cut the ranks' blocks, into a new and an existing
# file, 1-4 ranks; the refusals.
add_mpi_test(cz.gzip.np1 1 compressed_c.py)
add_mpi_test(cz.gzip.np3 3 compressed_c.py)
add_mpi_test(cz.gzip.existing.np2 2 compressed_c.py --case existing)
add_mpi_test(cz.gzip.tiled.np2 2 compressed_c.py --case tiled)
add_mpi_test(cz.gzip.tiled.np3 3 compressed_c.py --case tiled)
add_mpi_test(cz.gzip.tiled.np4 4 compressed_c.py --case tiled)
add_mpi_test(cz.gzip.hdf5.np2 2 compressed_c.py --hdf5)
add_mpi_test(cz.lz4.np2 2 compressed_c.py --compression lz4)
add_mpi_test(cz.lz4.noplugin.np3 3 compressed_c.py --compression lz4 --no-plugin --case existing)
add_mpi_test(cz.lz4.tiled.np3 3 compressed_c.py --compression lz4 --case tiled --no-plugin)
add_mpi_test(cz.lz4.hdf5.np1 1 compressed_c.py --compression lz4 --hdf5)
add_mpi_test(cz.zstd.np3 3 compressed_c.py --compression zstd --no-plugin)
add_mpi_test(cz.zstd.existing.np2 2 compressed_c.py --compression zstd --case existing)
add_mpi_test(cz.zstd.hdf5.np1 1 compressed_c.py --compression zstd --hdf5)
add_mpi_test(cz.bzip2.existing.np1 1 compressed_c.py --compression bzip2 --case existing)
add_mpi_test(error.cz.np2 2 compressed_c.py --case refusals)

# Many products in one launch (issue 42, job/launch.hpp): patterns and manifests, each C against numpy;
# a failed product in the middle with and without --keep-going; a kill in the middle of the list.
# tessera.matmul_blocks: distributed numpy blocks over mpi4py (issue 42 item 4), 1-4 ranks.
# Labelled python alone, as python.matmul: the module is a Python extension, which the sanitizer
# build (scripts/sanitize.sh runs the unit and mpi labels) builds instrumented and a plain Python
# cannot load.
foreach(_np 1 2 3 4)
  add_mpi_test(python.blocks.np${_np} ${_np} matmul_blocks.py)
  set_tests_properties(python.blocks.np${_np} PROPERTIES LABELS python)
endforeach()
add_mpi_test(products.many.np1 1 products.py --case many)
add_mpi_test(products.many.np3 3 products.py --case many)
add_mpi_test(products.shared-b.np2 2 products.py --case shared-b)
add_mpi_test(products.one.np2 2 products.py --case one)
add_mpi_test(products.none.np2 2 products.py --case none)
add_mpi_test(products.manifest.np2 2 products.py --case manifest)
add_mpi_test(products.manifest.np4 4 products.py --case manifest)
add_mpi_test(products.bad-middle.np2 2 products.py --case bad-middle)
add_mpi_test(products.keep-going.np3 3 products.py --case keep-going)
add_mpi_test(products.kill-new.np2 2 products.py --case kill-new)
add_mpi_test(products.kill-existing.np2 2 products.py --case kill-existing)
add_mpi_test(products.manifest-errors.np2 2 products.py --case manifest-errors)
add_mpi_test(products.dry-run.np2 2 products.py --case dry-run)
