#!/usr/bin/env bash
# supervise.sh NAME PIDDIR COMMAND [ARGS…]: runs COMMAND and starts it again whenever it exits, until
# PIDDIR/stopping exists. Backoff 1 s doubling to 30 s, back to 1 s after a run of a minute or more; one log
# line per restart with the exit status and the restart count. The service's own pid is in PIDDIR/NAME.pid
# (the service runs in a session of its own, so a terminal's Ctrl-C reaches only the caller), the
# supervisor's in PIDDIR/NAME.supervisor.pid; the caller stops both by pid (scripts/run.sh).
set -u
name="$1" piddir="$2"; shift 2
echo $$ >"$piddir/$name.supervisor.pid"
restarts=0 delay=1
while [ ! -e "$piddir/stopping" ]; do
  started=$SECONDS
  setsid --wait bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$piddir/$name.pid" "$@" &
  wait $! 2>/dev/null
  status=$?
  [ -e "$piddir/stopping" ] && break
  restarts=$((restarts + 1))
  if [ $((SECONDS - started)) -ge 60 ]; then delay=1; fi
  echo "exited with status $status; restart $restarts in ${delay}s" >&2
  sleep "$delay"
  delay=$((delay * 2)); [ "$delay" -gt 30 ] && delay=30
done
