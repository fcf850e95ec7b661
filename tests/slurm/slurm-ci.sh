#!/bin/bash
# slurm-ci.sh WHATIF_BINARY STUDY_TOML [SLURM_DOC]
#
# Runs a whatif study on a throw-away one-node Slurm cluster (munged + slurmctld + slurmd, all
# on this machine, all state in a temporary directory) with docs/slurm.md's own job scripts:
# a job array of N shards (`whatif sweep --shard i/N --jobs 1`), then a job depending on it
# (`--dependency=afterok:<array>`) running `whatif merge shards/* --out results`. The merged
# folder is then compared with a single-process `whatif sweep` of the same study.
#
# Exit status:
#   0   merged output (results/) is byte-identical to the single run (see "Comparison" below)
#   1   mismatch, a job failed, or the jobs did not finish within the timeout
#   2   bad usage (missing/unreadable arguments)
#   77  Slurm cannot be set up or run here (one-line reason on stderr); meant as "skip"
#
# Comparison: every file of results/ and single/ must be byte-identical, except
# whatif-complete.json, which records the command line that wrote the folder
# ("whatif sweep ..." vs "whatif merge ...") and so always differs; for that file only its
# presence and `"complete": true` are checked.
#
# Needs root (daemons run as root; packages are installed with apt-get if missing).
# Environment knobs:
#   WHATIF_SLURM_SHARDS   number of array tasks (default 3)
#   WHATIF_SLURM_TIMEOUT  seconds to wait for the array + merge (default 300)
#   WHATIF_SLURM_KEEP=1   keep the temporary directory (logs, outputs) after the run
#   WHATIF_SLURM_VERBOSE=1  print progress on stderr

set -u
set -o pipefail

SHARDS=${WHATIF_SLURM_SHARDS:-3}
TIMEOUT=${WHATIF_SLURM_TIMEOUT:-300}
KEEP=${WHATIF_SLURM_KEEP:-0}
VERBOSE=${WHATIF_SLURM_VERBOSE:-0}

log()  { [ "$VERBOSE" = 1 ] && echo "slurm-ci: [$(( $(date +%s) - T0 ))s] $*" >&2; return 0; }
T0=$(date +%s)
skip() { echo "slurm-ci: SKIP: $*" >&2; exit 77; }
fail() { echo "slurm-ci: FAIL: $*" >&2; exit 1; }

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 WHATIF_BINARY STUDY_TOML [SLURM_DOC (default: docs/slurm.md of this checkout)]" >&2
    exit 2
fi
DOC=$(cd "$(dirname "$0")/../.." && pwd)/docs/slurm.md
[ $# = 3 ] && DOC=$3
[ -r "$DOC" ] || { echo "slurm-ci: not readable: $DOC" >&2; exit 2; }
DOC=$(cd "$(dirname "$DOC")" && pwd)/$(basename "$DOC")
[ -x "$1" ] || { echo "slurm-ci: not an executable: $1" >&2; exit 2; }
[ -r "$2" ] || { echo "slurm-ci: not readable: $2" >&2; exit 2; }
case "$SHARDS" in ''|*[!0-9]*|0) echo "slurm-ci: bad WHATIF_SLURM_SHARDS=$SHARDS" >&2; exit 2;; esac

T_START=$(date +%s)

# ---------------------------------------------------------------- packages
[ "$(id -u)" = 0 ] || skip "not root (daemons are started as root)"

need_cmds="munged munge unmunge slurmctld slurmd sbatch squeue sinfo scontrol scancel"
missing=0
for c in $need_cmds; do command -v "$c" >/dev/null 2>&1 || missing=1; done
if [ $missing = 1 ]; then
    command -v apt-get >/dev/null 2>&1 || skip "Slurm/munge not installed and no apt-get"
    log "installing slurmctld slurmd slurm-client munge"
    export DEBIAN_FRONTEND=noninteractive
    pkgs="slurmctld slurmd slurm-client munge"
    if ! apt-get install -y -qq --no-install-recommends $pkgs >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1
        apt-get install -y -qq --no-install-recommends $pkgs >/dev/null 2>&1 \
            || skip "apt-get install $pkgs failed"
    fi
    for c in $need_cmds; do
        command -v "$c" >/dev/null 2>&1 || skip "$c still missing after apt-get install"
    done
fi
SLURM_VERSION=$(slurmctld -V 2>/dev/null | awk '{print $2}')
log "slurm $SLURM_VERSION, $(munged --version 2>&1 | head -1)"

# ---------------------------------------------------------------- work dir + teardown
# munged wants the socket's directory to be world-searchable and no ancestor world-writable
# without the sticky bit: /tmp (1777) is fine, the mktemp dir (0700) must become 0755.
W=$(mktemp -d "${TMPDIR:-/tmp}/whatif-slurm.XXXXXX") || skip "mktemp failed"
chmod 755 "$W"
mkdir -p "$W"/{bin,etc,state,spool,log,munge,run/shards}
chmod 700 "$W/state" "$W/spool"

MUNGED_PID= CTLD_PID= SLURMD_PID=
ours() {    # pids of processes started under this cluster (their environment has our SLURM_CONF)
    local e
    for e in /proc/[0-9]*/environ; do
        grep -qzx "SLURM_CONF=$W/etc/slurm.conf" "$e" 2>/dev/null && { e=${e%/environ}; echo "${e#/proc/}"; }
    done
}
teardown() {
    local rc=$?
    trap - EXIT INT TERM HUP
    trap '' PIPE    # a closed stderr must not stop the teardown
    local p i
    if [ -n "$CTLD_PID" ] && kill -0 "$CTLD_PID" 2>/dev/null; then
        # cancel what is left and let slurmstepd report back before stopping the daemons
        # (a slurmstepd whose slurmd is gone keeps retrying, and ignores SIGTERM)
        scancel --quiet --user=root 2>/dev/null
        for i in $(seq 1 75); do
            [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
        scontrol shutdown >/dev/null 2>&1       # stops slurmctld and slurmd
    fi
    for p in $SLURMD_PID $CTLD_PID; do
        for i in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null
        for i in $(seq 1 25); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
    done
    # anything still carrying this cluster's SLURM_CONF (slurmstepd, job processes) is ours;
    # unexport it first so that the helpers run here (grep) do not match themselves
    export -n SLURM_CONF 2>/dev/null
    for p in $(ours); do [ "$p" != $$ ] && kill -KILL "$p" 2>/dev/null; done
    if [ -n "$MUNGED_PID" ]; then
        kill -TERM "$MUNGED_PID" 2>/dev/null
        for i in $(seq 1 25); do kill -0 "$MUNGED_PID" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$MUNGED_PID" 2>/dev/null && kill -KILL "$MUNGED_PID" 2>/dev/null
    fi
    wait 2>/dev/null
    if [ "$rc" != 0 ] && [ "$rc" != 77 ] || [ "$KEEP" = 1 ]; then
        if [ "$KEEP" = 1 ]; then
            echo "slurm-ci: kept $W" >&2
        else
            for f in "$W"/run/slurm-*.out; do
                [ -s "$f" ] || continue
                echo "---- ${f#$W/} (last 10 lines)" >&2; tail -n 10 "$f" >&2
            done
            for f in "$W"/log/slurmctld.log "$W"/log/slurmd.log; do
                [ -s "$f" ] || continue
                echo "---- ${f#$W/}: errors (last 10)" >&2
                grep -iE 'error|fatal' "$f" | grep -v -e pmix -e 'MPI:' -e 'state file' \
                    -e 'backup state' | tail -n 10 >&2
            done
        fi
    fi
    [ "$KEEP" = 1 ] || rm -rf "$W"
    exit "$rc"
}
trap teardown EXIT
trap "" PIPE     # a closed stderr (e.g. piped into head) must not kill us before teardown
trap 'exit 130' INT
trap 'exit 143' TERM HUP

cp "$1" "$W/bin/whatif" || skip "cannot copy $1"
cp "$2" "$W/run/study.toml" || skip "cannot copy $2"
WHATIF="$W/bin/whatif"

# ---------------------------------------------------------------- munged
dd if=/dev/urandom of="$W/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$W/munge/munge.key"
SOCK="$W/munge/munge.socket"
munged -F --key-file="$W/munge/munge.key" --socket="$SOCK" \
    --pid-file="$W/munge/munged.pid" --log-file="$W/log/munged.log" \
    --seed-file="$W/munge/munged.seed" >"$W/log/munged.out" 2>&1 &
MUNGED_PID=$!
for i in $(seq 1 50); do [ -S "$SOCK" ] && break; kill -0 $MUNGED_PID 2>/dev/null || break; sleep 0.1; done
if ! munge -S "$SOCK" -n 2>/dev/null | unmunge -S "$SOCK" >/dev/null 2>&1; then
    why=$(grep -h -m1 -E 'Error' "$W/log/munged.log" "$W/log/munged.out" 2>/dev/null | head -1)
    skip "munged does not work: ${why:-munge -n | unmunge failed}"
fi
log "munged up (pid $MUNGED_PID)"

# ---------------------------------------------------------------- slurm.conf
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() {
    local p i
    for i in $(seq 1 50); do
        p=$(( 20000 + (RANDOM % 20000) ))
        [ "$p" != "${1:-}" ] && port_free "$p" && { echo "$p"; return 0; }
    done
    return 1
}
CTLD_PORT=$(pick_port) || skip "no free TCP port for slurmctld"
SLURMD_PORT=$(pick_port "$CTLD_PORT") || skip "no free TCP port for slurmd"

NODE=$(hostname -s 2>/dev/null || hostname)
[ -n "$NODE" ] || NODE=localhost
CPUS=$(nproc 2>/dev/null || echo 1)
MEM_MB=$(awk '/^MemTotal:/ {print int($2/1024)}' /proc/meminfo 2>/dev/null)
MEM_MB=${MEM_MB:-2048}; REALMEM=$(( MEM_MB / 2 )); [ $REALMEM -gt 1024 ] && REALMEM=1024
[ $REALMEM -lt 1 ] && REALMEM=1

export SLURM_CONF="$W/etc/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=whatifci
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/state/slurmctld.pid
SlurmdPidFile=$W/spool/slurmd.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=600
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$REALMEM State=UNKNOWN
PartitionName=ci Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

# ---------------------------------------------------------------- slurmctld + slurmd
slurmctld -D -f "$SLURM_CONF" >"$W/log/slurmctld.out" 2>&1 &
CTLD_PID=$!
for i in $(seq 1 100); do
    scontrol ping 2>/dev/null | grep -q 'is UP' && break
    kill -0 $CTLD_PID 2>/dev/null || break
    sleep 0.2
done
if ! scontrol ping 2>/dev/null | grep -q 'is UP'; then
    why=$(grep -h -m1 -iE 'fatal|error' "$W/log/slurmctld.out" "$W/log/slurmctld.log" 2>/dev/null \
          | grep -v -e pmix -e 'MPI:' -e 'state file' -e 'backup state' | head -1)
    skip "slurmctld did not come up: ${why:-no reason logged}"
fi
log "slurmctld up (pid $CTLD_PID, port $CTLD_PORT)"

slurmd -D -f "$SLURM_CONF" -N "$NODE" >"$W/log/slurmd.out" 2>&1 &
SLURMD_PID=$!
state=
for i in $(seq 1 150); do
    state=$(sinfo -h -N -n "$NODE" -o '%T' 2>/dev/null | head -1)
    [ "$state" = idle ] && break
    kill -0 $SLURMD_PID 2>/dev/null || break
    sleep 0.2
done
if [ "$state" != idle ]; then
    why=$(grep -h -m1 -iE 'fatal|error' "$W/log/slurmd.out" "$W/log/slurmd.log" 2>/dev/null \
          | grep -v -e pmix -e 'MPI:' | head -1)
    skip "node $NODE not idle (state '${state:-?}'): ${why:-slurmd gave no reason}"
fi
log "slurmd up (pid $SLURMD_PID), node $NODE idle"

# smoke test: can this node launch a batch job at all? (polled here: `sbatch --wait` sleeps
# up to 10 s between polls)
cd "$W/run" || skip "cd $W/run"
SMOKE_ID=$(sbatch --parsable -o /dev/null -e "$W/log/smoke.err" --wrap=/bin/true 2>"$W/log/sbatch.err") \
    || skip "sbatch of a trivial job failed: $(head -1 "$W/log/sbatch.err")"
SMOKE_ID=${SMOKE_ID%%;*}
for i in $(seq 1 300); do
    [ -z "$(squeue -h -j "$SMOKE_ID" -o %i 2>/dev/null)" ] && break
    sleep 0.2
done
if ! scontrol -o show job "$SMOKE_ID" 2>/dev/null | grep -q 'JobState=COMPLETED '; then
    st=$(scontrol -o show job "$SMOKE_ID" 2>/dev/null | grep -o -E 'JobState=[^ ]+ Reason=[^ ]+')
    why=$(grep -h -m1 -iE 'fatal|error' "$W/log/smoke.err" "$W/log/slurmd.log" 2>/dev/null \
          | grep -v -e pmix -e 'MPI:' | head -1)
    skip "trivial batch job did not complete within 60 s (${st:-no state}): ${why:-no reason logged}"
fi
T_UP=$(date +%s)
log "cluster ready in $((T_UP - T_START)) s"

# ---------------------------------------------------------------- array + dependent merge
# The job scripts are docs/slurm.md's, as written: its first ```sh block is the array job,
# its second the merge, its third the submission. Only the shard count, the threads per shard,
# the whatif binary and the log files are changed to fit this machine; a change of the docs
# that these edits no longer match fails the test.
block() {   # block N: the Nth ```sh block of the docs
    awk -v want="$1" '/^```sh$/ { n++; inside = (n == want); next } /^```$/ { inside = 0 } inside' "$DOC"
}
block 1 >array.doc; block 2 >merge.doc; block 3 >submit.doc
grep -q -- '--array=0-15' array.doc && grep -q '^N=16$' array.doc \
    && grep -q -- '--cpus-per-task=8' array.doc && grep -q '^whatif sweep study.toml' array.doc \
    || fail "$DOC: its array job no longer has --array=0-15, N=16, --cpus-per-task=8 and 'whatif sweep study.toml'"
grep -q '^whatif merge shards/\* --out results$' merge.doc \
    || fail "$DOC: its merge job no longer runs 'whatif merge shards/* --out results'"
grep -q '^mkdir -p shards$' submit.doc && grep -q -- '--kill-on-invalid-dep=yes merge.sh' submit.doc \
    && grep -q 'sbatch --parsable array.sh' submit.doc \
    || fail "$DOC: its submission no longer makes shards/ and submits array.sh, then merge.sh after it"
sed -e "s|--array=0-15|--array=0-$((SHARDS - 1))|" -e "s|^N=16\$|N=$SHARDS|" \
    -e "s|--cpus-per-task=8|--cpus-per-task=1|" -e "s|^whatif |\"$WHATIF\" |" \
    -e "1a #SBATCH --output=$W/run/slurm-%A_%a.out" array.doc >array.sh
sed -e "s|^whatif |\"$WHATIF\" |" -e "1a #SBATCH --output=$W/run/slurm-merge-%j.out" \
    merge.doc >merge.sh
log "array.sh:"; [ "$VERBOSE" = 1 ] && cat array.sh >&2
mkdir -p shards

ARRAY_ID=$(sbatch --parsable --chdir="$W/run" array.sh 2>"$W/log/sbatch.err") \
    || fail "sbatch array.sh: $(head -1 "$W/log/sbatch.err")"
ARRAY_ID=${ARRAY_ID%%;*}
MERGE_ID=$(sbatch --parsable --chdir="$W/run" --kill-on-invalid-dep=yes \
           --dependency=afterok:"$ARRAY_ID" merge.sh 2>"$W/log/sbatch.err") \
    || fail "sbatch merge.sh: $(head -1 "$W/log/sbatch.err")"
MERGE_ID=${MERGE_ID%%;*}
log "submitted array $ARRAY_ID ($SHARDS tasks), merge $MERGE_ID (afterok:$ARRAY_ID)"

deadline=$(( $(date +%s) + TIMEOUT ))
while :; do
    left=$(squeue -h -j "$ARRAY_ID,$MERGE_ID" -o '%i' 2>/dev/null | wc -l)
    [ "$left" = 0 ] && break
    if [ "$(date +%s)" -ge "$deadline" ]; then
        squeue -j "$ARRAY_ID,$MERGE_ID" -o '%i %T %r' >&2
        fail "jobs not finished after ${TIMEOUT}s"
    fi
    sleep 0.5
done
T_JOBS=$(date +%s)

bad=$( { scontrol -o show job "$ARRAY_ID"; scontrol -o show job "$MERGE_ID"; } 2>/dev/null \
       | grep -v 'JobState=COMPLETED ' \
       | sed -E 's/.*(JobId=[^ ]+).*(JobName=[^ ]+).*(JobState=[^ ]+).*(ExitCode=[^ ]+).*/\1 \2 \3 \4/')
done_n=$( { scontrol -o show job "$ARRAY_ID"; scontrol -o show job "$MERGE_ID"; } 2>/dev/null \
       | grep -c 'JobState=COMPLETED ')
[ -z "$bad" ] || fail "job(s) did not complete: $(echo $bad)"
[ "$done_n" = $((SHARDS + 1)) ] || fail "expected $((SHARDS + 1)) completed jobs, saw $done_n"
log "array + merge completed in $((T_JOBS - T_UP)) s"

# ---------------------------------------------------------------- single run + compare
"$WHATIF" sweep study.toml --out single -q 2>"$W/log/single.err" \
    || fail "single-process sweep failed: $(head -1 "$W/log/single.err")"
T_SINGLE=$(date +%s)

[ -d results ] || fail "merge job wrote no results/ folder"
if ! diff -r -x whatif-complete.json results single >"$W/log/diff.txt" 2>&1; then
    head -n 40 "$W/log/diff.txt" >&2
    fail "results/ differs from single/ (see diff above)"
fi
for d in results single; do
    grep -q '"complete": *true' "$d/whatif-complete.json" 2>/dev/null \
        || fail "$d/whatif-complete.json missing or not complete"
done
nfiles=$(find single -type f | wc -l)
echo "slurm-ci: OK: slurm $SLURM_VERSION, $SHARDS shards + merge byte-identical to single run" \
     "($nfiles files; whatif-complete.json differs only in its command line);" \
     "setup $((T_UP - T_START)) s, jobs $((T_JOBS - T_UP)) s, total $((T_SINGLE - T_START)) s" >&2
exit 0
