#!/bin/sh
# bench_dist.sh — data-parallel training on this machine: 2 MPI ranks × 1
# thread (`mpirun -np 2 ramtrace train --dist mpi -j1`) against 1 process ×
# 2 threads (`ramtrace train -j2`) on the same global batch (the text task,
# samples/configs/tiny.cfg over data/kjv.txt, batch 16 × 256 tokens), and
# for scale 1 process × 1 thread.
# Each run's rate is the tokens/s of its last logged step (tokens trained
# since the loop started over the time since: setup and the final
# evaluation are not in it); the runs alternate, and the medians of REPS
# runs each are compared.  Target: the two ranks at >= 0.9x.
#
#   bench/bench_dist.sh [BIN] [REPS] [STEPS]     (make bench-dist)
set -e
BIN=${1:-./ramtrace}
REPS=${2:-5}
STEPS=${3:-30}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
COMMON="--task text --config samples/configs/tiny.cfg --data data/kjv.txt --steps $STEPS --batch 16 --seq-len 256
        --set eval_every=0 --set ckpt_every=0 --set log_every=$STEPS --set eval_windows=1 -q"
rate() { sed -n 's/.*"tok_per_s":\([0-9.]*\).*/\1/p' "$1" | tail -n 1; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
for i in $(seq "$REPS"); do
    rm -f "$T/one.log" "$T/two.log" "$T/single.log"
    $BIN train $COMMON -j2 -o "$T/one.bin" --log "$T/one.log"
    mpirun --oversubscribe -np 2 $BIN train $COMMON -j1 -o "$T/two.bin" --log "$T/two.log" --dist mpi
    $BIN train $COMMON -j1 -o "$T/single.bin" --log "$T/single.log"
    a=$(rate "$T/one.log"); b=$(rate "$T/two.log"); c=$(rate "$T/single.log")
    echo "run $i: 1 process x 2 threads $a tok/s, 2 ranks x 1 thread $b tok/s, 1 process x 1 thread $c tok/s"
    echo "$a" >> "$T/one.rates"; echo "$b" >> "$T/two.rates"; echo "$c" >> "$T/single.rates"
done
a=$(median < "$T/one.rates"); b=$(median < "$T/two.rates"); c=$(median < "$T/single.rates")
echo "median of $REPS: 1 process x 2 threads $a tok/s, 2 ranks x 1 thread $b tok/s (ratio $(echo "$b $a" | awk '{printf "%.3f", $1/$2}'), target >= 0.9), 1 process x 1 thread $c tok/s"
