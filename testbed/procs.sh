# Sourced by testbed/cluster.sh and testbed/kubelet.sh: the processes of a testbed folder.
# REQUIRES: $dir is the folder; its logs/ and pids/ hold one file per process.
#   port_free PORT       true when nothing listens on 127.0.0.1:PORT
#   start NAME CMD...    CMD in its own session; output to logs/NAME.log (truncated), pid to
#                        pids/NAME
#   stop NAME            SIGTERM to NAME's session, SIGKILL after 10 s; a no-op when not running

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local name=$1; shift
  mkdir -p "$dir/logs" "$dir/pids"
  setsid "$@" >"$dir/logs/$name.log" 2>&1 < /dev/null &
  echo $! >"$dir/pids/$name"
}

stop() {
  local f="$dir/pids/$1" pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$f"
}
