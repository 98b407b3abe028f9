#!/bin/bash
# The environment options of both families: Hydra's -genv, -genvlist,
# -genvall, -genvnone (every program) and -env, -envlist, -envall, -envnone
# (one program), Open MPI's -x and --mca. On mpirun's node ranks inherit
# mpirun's environment anyway; on another node (a daemon started with a
# fresh login environment, as ssh gives) only what is exported arrives.
. "$AXON_SRCDIR/test/launcher/lib.sh"
agent="$AXON_SRCDIR/test/launcher/local_agent.sh {}"
two_nodes=(--launch-agent "$agent" -H localhost,axon-env2 -np 2)

value_of() {  # value_of RANK NAME: what "env=NAME" printed for RANK
    sed -n "s/^rank $1 $2=//p" "$work/out"
}
expect_values() {  # expect_values WHAT NAME RANK0-VALUE RANK1-VALUE
    [[ "$(value_of 0 "$2")|$(value_of 1 "$2")" == "$3|$4" ]] ||
        { show_output; fail "$1: $2 is '$(value_of 0 "$2")' / '$(value_of 1 "$2")', expected '$3' / '$4'"; }
}

export AXON_ENV_A=alpha AXON_ENV_B=beta
unset AXON_ENV_UNSET

# Nothing exported: rank 1 (the other node) has none of mpirun's variables.
run_mpirun "${two_nodes[@]}" "$probe" env=AXON_ENV_A marker=$marker
expect_rc 0 "no export"
expect_values "no export" AXON_ENV_A alpha "(unset)"

# -genv NAME VALUE and -genv NAME=VALUE; -x NAME; -env NAME VALUE.
run_mpirun "${two_nodes[@]}" -genv AXON_ENV_G one -genv AXON_ENV_H=two -x AXON_ENV_A -env AXON_ENV_B local \
    "$probe" env=AXON_ENV_G env=AXON_ENV_H env=AXON_ENV_A env=AXON_ENV_B
expect_rc 0 "-genv/-x/-env"
expect_values "-genv NAME VALUE" AXON_ENV_G one one
expect_values "-genv NAME=VALUE" AXON_ENV_H two two
expect_values "-x NAME" AXON_ENV_A alpha alpha
expect_values "-env NAME VALUE" AXON_ENV_B local local

# -genvlist / -envlist: these of mpirun's variables; unset ones stay unset.
for option in -genvlist -envlist; do
    run_mpirun "${two_nodes[@]}" $option AXON_ENV_A,AXON_ENV_UNSET "$probe" env=AXON_ENV_A env=AXON_ENV_B \
        env=AXON_ENV_UNSET
    expect_rc 0 "$option"
    expect_values "$option" AXON_ENV_A alpha alpha
    expect_values "$option (not listed)" AXON_ENV_B beta "(unset)"
    expect_values "$option (unset)" AXON_ENV_UNSET "(unset)" "(unset)"
done

# -genvall / -envall: all of mpirun's environment (not its shell's own
# SHLVL, PWD, ...); an explicit -env still wins; -genvnone / -envnone
# take it back.
for option in -genvall -envall; do
    run_mpirun "${two_nodes[@]}" $option -env AXON_ENV_B mine "$probe" env=AXON_ENV_A env=AXON_ENV_B env=OLDPWD
    expect_rc 0 "$option"
    expect_values "$option" AXON_ENV_A alpha alpha
    expect_values "$option with -env" AXON_ENV_B mine mine
    expect_values "$option leaves mpirun's shell out" OLDPWD "${OLDPWD:-(unset)}" "(unset)"
done
run_mpirun "${two_nodes[@]}" -genvall -genvnone "$probe" env=AXON_ENV_A
expect_values "-genvall -genvnone" AXON_ENV_A alpha "(unset)"
run_mpirun "${two_nodes[@]}" -envall -envnone "$probe" env=AXON_ENV_A
expect_values "-envall -envnone" AXON_ENV_A alpha "(unset)"

# -genv is every program's, -env/-x one program's (MPMD).
run_mpirun --launch-agent "$agent" -genv AXON_ENV_G all -np 1 -host localhost -env AXON_ENV_L first "$probe" \
    env=AXON_ENV_G env=AXON_ENV_L : -np 1 -host axon-env2 "$probe" env=AXON_ENV_G env=AXON_ENV_L
expect_rc 0 "-genv and -env with two programs"
expect_values "-genv, two programs" AXON_ENV_G all all
expect_values "-env, two programs" AXON_ENV_L first "(unset)"

# --mca: Open MPI parameters with an Axon equivalent become AXON_* variables
# of every rank; others are named on one line each and ignored; the job runs.
run_mpirun "${two_nodes[@]}" --mca btl self,vader,tcp -mca btl_tcp_if_include lo --mca pml ob1 \
    --mca btl_vader_single_copy_mechanism none "$probe" env=AXON_BTL env=AXON_BTL_TCP_IF_INCLUDE env=AXON_BTL_SM_CMA
expect_rc 0 "--mca"
expect_values "--mca btl" AXON_BTL self,sm,tcp self,sm,tcp
expect_values "--mca btl_tcp_if_include" AXON_BTL_TCP_IF_INCLUDE lo lo
expect_values "--mca btl_vader_single_copy_mechanism" AXON_BTL_SM_CMA 0 0
[[ "$(cat "$work/err")" == "mpirun: --mca pml ob1 ignored: an Open MPI parameter Axon has no equivalent for (Axon's settings are AXON_* environment variables: axon_info --params)" ]] ||
    { show_output; fail "--mca pml: the note"; }
run_mpirun -np 1 --mca btl ^tcp "$probe" env=AXON_BTL
expect_values "--mca btl ^tcp" AXON_BTL "self,sm" ""
run_mpirun -np 1 --mca btl ^openib "$probe" env=AXON_BTL
expect_rc 0 "--mca btl ^openib"
expect_values "--mca btl ^openib" AXON_BTL "(unset)" ""
expect_line "$work/err" "^mpirun: --mca btl \^openib ignored: it selects no transport Axon has" "--mca btl ^openib note"
# -genv wins over what --mca gave, whatever the order.
run_mpirun -np 1 -genv AXON_BTL self,sm --mca btl tcp,self "$probe" env=AXON_BTL
expect_values "-genv over --mca" AXON_BTL "self,sm" ""
expect_no_orphans
echo "environment options OK"
