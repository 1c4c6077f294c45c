#!/usr/bin/env bash
# What ssh adds per evaluation on loopback (issue #14's goal: under 0.3 s): a private sshd on
# 127.0.0.1 with throwaway keys (as tst_sshworker), then bench/ssh_overhead.cpp evaluates the
# same kernel through a worker started directly and one started over ssh, in alternation.
#
#   ROUNDS=20 bash bench/ssh_overhead.sh [PRESET]     (default preset: ci; host backend, no GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-ci}
bin=$PWD/build/$preset/bin
cmake --build --preset "$preset" --target ksearch_bench_ssh ksearch ksearch-runner >/dev/null
dir=$(mktemp -d /tmp/ssh-bench-XXXXXX)
trap '[ -f "$dir/sshd.pid" ] && kill "$(cat "$dir/sshd.pid")" 2>/dev/null; rm -rf "$dir"' EXIT
for k in host_key user_key; do ssh-keygen -q -t ed25519 -N "" -f "$dir/$k"; done
cp "$dir/user_key.pub" "$dir/authorized_keys"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$dir/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin yes
CONF
mkdir -p /run/sshd
/usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
ssh_cmd="ssh -p $port -i $dir/user_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR $(id -un)@127.0.0.1"
for _ in $(seq 50); do $ssh_cmd true 2>/dev/null && break; done
task=${TASK:-tasks/rmsnorm}
env KSEARCH_TASKS_PATH="$PWD/tasks" "$bin/ksearch_bench_ssh" "$PWD/$task" "$PWD/$task/baseline.cpp" "${ROUNDS:-20}" \
    "${WORKLOAD:-e316a464}" "$bin/ksearch worker" "$ssh_cmd env KSEARCH_TASKS_PATH=$PWD/tasks $bin/ksearch worker"
