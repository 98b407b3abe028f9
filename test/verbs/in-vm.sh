#!/bin/sh
# Runs inside the soft-RoCE VM (see vm.sh), in the build directory:
#   in-vm.sh GROUP   every program of GROUP with AXON_BTL=verbs,self, so each
#                    byte between ranks crosses rxe0 (verbs READ/SEND/WRITE).
# Prints PASS/FAIL per program; exits 1 when any failed.
B=$AXON_BUILDDIR
export AXON_BTL=verbs,self
failed=0
run() {  # run NAME NP PROGRAM [ARGS]
  name=$1 np=$2; shift 2
  start=$(date +%s)
  if timeout -k 5 120 "$B/src/launcher/mpirun" -np "$np" "$B/$@" > /tmp/out.$$ 2>&1; then
    echo "PASS  $name ($(( $(date +%s) - start ))s)"
  else
    echo "FAIL  $name (exit $?):"; tail -20 /tmp/out.$$ | sed 's/^/      | /'; failed=1
  fi
}
case "$1" in
  pingpong)
    run pingpong_np2 2 test/verbs/pingpong
    run pingpong_np3 3 test/verbs/pingpong 2097152
    # tiny eager limit and few credits: every message beyond 256 B is an RDMA
    # READ, and senders keep running out of credits
    AXON_BTL_VERBS_EAGER_LIMIT=256 AXON_BTL_VERBS_CREDITS=4 AXON_BTL_VERBS_SEND_BUFFERS=8 \
      run pingpong_small_np2 2 test/verbs/pingpong 1048576 ;;
  p2p)
    for p in p2p_basic p2p_ordering p2p_modes p2p_nonblocking p2p_probe p2p_persistent; do
      run "$p"_np2 2 test/mpi/$p
    done
    # The first send to a peer waits in the PML's queue while the connection
    # is set up: cancelling it must still work (src/pml/protocol.cpp cancel_send).
    run cancel_send_np2 2 test/p2p/cancel_send ;;
  coll)
    run coll_min_np2 2 test/mpi/coll_min
    run coll_min_np3 3 test/mpi/coll_min
    run coll_barrier_np3 3 test/coll/coll_driver barrier
    run coll_alltoall_np2 2 test/coll/coll_driver alltoall
    run coll_bcast_np2 2 test/coll/coll_driver bcast
    run coll_allreduce_np2 2 test/coll/coll_driver allreduce ;;
  doctor)
    out=$("$B/src/tools/axon_info" --doctor 2>&1); rc=$?
    echo "$out"
    for want in rxe0 ACTIVE Ethernet "RoCE v2" "ulimit -l"; do
      echo "$out" | grep -q "$want" || { echo "FAIL  doctor: no '$want' in the output"; failed=1; }
    done
    [ $rc = 0 ] || { echo "FAIL  doctor exit $rc"; failed=1; }
    [ $failed = 0 ] && echo "PASS  doctor"
    # A locked-memory limit too low for the transport's buffers, without
    # CAP_IPC_LOCK (root ignores the limit): start-up must fail and say so.
    out=$(setpriv --bounding-set=-ipc_lock sh -c "ulimit -l 64; AXON_BTL=verbs,self timeout 60 \
          $B/src/launcher/mpirun -np 2 $B/test/verbs/pingpong 4096" 2>&1); rc=$?
    if [ $rc -ne 0 ] && echo "$out" | grep -q "locked-memory limit (ulimit -l) is 64 KiB; raise it"; then
      echo "PASS  memlock_too_low"
    else
      echo "$out"; echo "FAIL  memlock_too_low (exit $rc, expected the ulimit -l message)"; failed=1
    fi ;;
  rndv)
    # Rendezvous by RDMA READ (default) and by RDMA WRITE (RPUT), pipelined in
    # 64 KiB chunks (messages of 6.5 MiB: ~100 chunks, bounded in flight):
    # exact data, and the job's byte and chunk counters (MPI_T) must show
    # that every rendezvous byte moved by the chosen operation.
    AXON_BTL_VERBS_PIPELINE_CHUNK=65536 run rndv_get_np2 2 test/verbs/rndv get 65536
    AXON_BTL_VERBS_RNDV=put AXON_BTL_VERBS_PIPELINE_CHUNK=65536 AXON_BTL_VERBS_PIPELINE_DEPTH=3 \
      run rndv_put_np3 3 test/verbs/rndv put 65536
    AXON_BTL_VERBS_RNDV=put AXON_BTL_VERBS_EAGER_LIMIT=256 AXON_BTL_VERBS_CREDITS=4 \
      run pingpong_put_np2 2 test/verbs/pingpong 2097152
    AXON_BTL_VERBS_RNDV=put run p2p_modes_put_np2 2 test/mpi/p2p_modes ;;
  segments)
    # Send buffers (RGET) and receive buffers (RPUT) larger than two
    # segments are exposed 256 KiB at a time (two at once, the next as the
    # peer acknowledges one): exact data, chunks, and exactly
    # ceil(size / 256 KiB) segments exposed per such message.
    AXON_BTL_VERBS_PIPELINE_CHUNK=65536 AXON_BTL_VERBS_EXPOSE_SEGMENT=262144 \
      run rndv_get_seg_np3 3 test/verbs/rndv get 65536 seg=262144
    AXON_BTL_VERBS_RNDV=put AXON_BTL_VERBS_PIPELINE_CHUNK=65536 AXON_BTL_VERBS_EXPOSE_SEGMENT=262144 \
      run rndv_put_seg_np2 2 test/verbs/rndv put 65536 seg=262144 ;;
  rails)
    # Two rails (vm.sh gives this group two NICs: rxe0, rxe1): eager on rail
    # 0, rendezvous striped over both by port rate; exact data, and each
    # rail's byte counter (MPI_T) non-zero, both adding up to the total.
    AXON_BTL_VERBS_DEVICE=rxe0,rxe1 run rails_get_np2 2 test/verbs/rndv get 0 rails
    AXON_BTL_VERBS_RNDV=put AXON_BTL_VERBS_PIPELINE_CHUNK=65536 run rails_put_np3 3 test/verbs/rndv put 0 rails
    run rails_pingpong_np2 2 test/verbs/pingpong 4194304
    AXON_BTL_VERBS_RAILS=1 run one_rail_np2 2 test/verbs/rndv get 0 onerail ;;
  overlap)
    # A 16 MiB RDMA READ in flight (rank 1 -> rank 0) while rank 2 ping-pongs
    # with rank 0: rank 0 must answer at least 10 pings between the first
    # piece read and the last (get() posts and returns; completions come from
    # progress). 64 KiB pieces, 2 in flight: rxe in the VM carries every QP
    # through one emulated loopback, so a ping waits behind the READ data
    # queued ahead of it; little in flight keeps that wait short.
    AXON_BTL_VERBS_PIPELINE_CHUNK=65536 AXON_BTL_VERBS_PIPELINE_DEPTH=2 \
      run overlap_np3 3 test/verbs/overlap 16777216 10 ;;
  rcache)
    # The registration cache (MPI_T counters, see test/verbs/regcache.c): a
    # buffer sent 10 times is registered once on the exposing side and once
    # per piece on the moving side (RGET and RPUT); memory replaced under a
    # cached registration (munmap + mmap, mmap MAP_FIXED, madvise, free +
    # malloc at the same address) is never served stale; AXON_RCACHE=off:
    # no hits, a registration per use, exact data.
    AXON_BTL_VERBS_PIPELINE_CHUNK=262144 run reuse_get_np2 2 test/verbs/regcache reuse get 1056768 262144
    AXON_BTL_VERBS_PIPELINE_CHUNK=262144 AXON_BTL_VERBS_RNDV=put \
      run reuse_put_np2 2 test/verbs/regcache reuse put 1056768 262144
    run remap_get_np2 2 test/verbs/regcache remap 1052675
    AXON_BTL_VERBS_RNDV=put run remap_put_np2 2 test/verbs/regcache remap 1052675
    AXON_RCACHE=off AXON_BTL_VERBS_PIPELINE_CHUNK=262144 \
      run off_get_np2 2 test/verbs/regcache off get 1056768 262144
    AXON_RCACHE=off run off_remap_np2 2 test/verbs/regcache remap 1052675 ;;
  rma)
    # One-sided communication by active messages over verbs: AXON_OSC_PATH=am
    # reaches every other rank of a window through rxe0 (the ranks share the
    # VM, so the default path would map or CMA their memory instead).
    AXON_OSC_PATH=am run rma_ops_create_np2 2 test/rma/rma_ops create
    AXON_OSC_PATH=am run rma_atomic_allocate_np3 3 test/rma/rma_atomic allocate
    AXON_OSC_PATH=am run rma_big_dynamic_np2 2 test/rma/rma_big dynamic
    AXON_OSC_PATH=am run rma_passive_allocate_np3 3 test/rma/rma_passive allocate ;;
  rmardma)
    # One-sided communication by RDMA (src/osc/rdma.cpp): AXON_OSC_PATH=rdma
    # reaches every other rank through rxe0 with RDMA WRITE / READ, and since
    # every rank then goes through the NIC, 8-byte MPI_SUM and compare-and-swap
    # use the NIC's atomics (a rank's own memory through a neighbour); the log
    # (AXON_VERBOSE=1) must say so.
    export AXON_OSC_PATH=rdma
    AXON_VERBOSE=1 run rma_rdma_allocate_np3 3 test/rma/rma_rdma allocate
    if grep -q "by NIC atomics (every rank through the NIC)" /tmp/out.$$; then echo "PASS  nic_atomics_used"
    else echo "FAIL  nic_atomics_used: no 'by NIC atomics' in the log"; failed=1; fi
    # 1 MiB Put / Get: the transport's pipelined WRITE / READ
    run rma_big_allocate_np2 2 test/rma/rma_big allocate ;;
  rmardma_ops)
    # The same path for every operation x synchronization (rma_ops: Win_create
    # and Win_allocate registrations) and for a passive target that computes
    # outside MPI (rma_passive).
    export AXON_OSC_PATH=rdma
    run rma_ops_create_np3 3 test/rma/rma_ops create
    run rma_ops_allocate_np2 2 test/rma/rma_ops allocate
    run rma_passive_create_np2 2 test/rma/rma_passive create ;;
  rmadyn)
    # Dynamic windows by RDMA: regions registered at MPI_Win_attach, keys
    # fetched on first use and dropped at MPI_Win_detach. rma_dynamic rdma
    # replaces a region by new memory at the same address and asserts with
    # the osc counters (MPI_T) that every Put / Get to another rank went by
    # RDMA except those spanning two regions, and that the keys were dropped.
    export AXON_OSC_PATH=rdma
    run rma_dynamic_rdma_np2 2 test/rma/rma_dynamic rdma
    run rma_dynamic_rdma_np3 3 test/rma/rma_dynamic rdma
    run rma_ops_dynamic_np2 2 test/rma/rma_ops dynamic
    run rma_attach_np2 2 test/rma/rma_attach
    run rma_batch_dynamic_np2 2 test/rma/rma_batch dynamic ;;
  *) echo "unknown group $1"; exit 2 ;;
esac
exit $failed
