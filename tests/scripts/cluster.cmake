# tessera across nodes, on a simulated cluster the test makes on this machine (cluster_test.py,
# tests/cluster/cluster.py, docs/cluster.md): nodes node1..nodeN as Linux namespaces with their own
# host names, mounts and addresses on a bridge, one slurmd each. One cluster per test; skipped
# (exit 77, with the reason) without root, namespaces or Slurm. RUN_SERIAL: the nodes' ranks share
# this machine's cores, and the daemons must not race the local-Slurm test's.
tessera_script_test(cluster.nodes2 cluster_test.py --nodes 2)
tessera_script_test(cluster.nodes4 cluster_test.py --nodes 4 --cases algorithms,write,sbatch,faults,model)
set_tests_properties(cluster.nodes2 cluster.nodes4 PROPERTIES LABELS cluster TIMEOUT 900 RUN_SERIAL TRUE)
