#!/bin/sh
# A stand-in for `claude` in the driver tests. It ignores its arguments and plays the plan in
# $FAKE_PLAN, one step per line:
#   OUT <json>    print a line on stdout          ERR <text>   print a line on stderr
#   IN            read one stdin line (logged)    ACK          read a control request, answer success
#   SLEEP <secs>  run `sleep` as a child           EXIT <code>  exit
# Every stdin line read is appended to $FAKE_LOG; the process id goes to $FAKE_PIDFILE; the
# arguments, one line per start, to $FAKE_ARGS. The Nth start plays "$FAKE_PLAN.N" when that
# file exists.
exec 3<&0
log=${FAKE_LOG:-/dev/null}
[ -n "$FAKE_PIDFILE" ] && echo $$ > "$FAKE_PIDFILE"
plan=$FAKE_PLAN
if [ -n "$FAKE_ARGS" ]; then
  printf '%s\n' "$*" >> "$FAKE_ARGS"
  starts=$(wc -l < "$FAKE_ARGS" | tr -d ' ')
  [ -f "$FAKE_PLAN.$starts" ] && plan="$FAKE_PLAN.$starts"
fi
while IFS= read -r step; do
  verb=${step%% *}
  arg=${step#* }
  case "$verb" in
    OUT) printf '%s\n' "$arg" ;;
    ERR) printf '%s\n' "$arg" >&2 ;;
    IN) IFS= read -r line <&3 || exit 0; printf '%s\n' "$line" >> "$log" ;;
    ACK)
      IFS= read -r line <&3 || exit 0
      printf '%s\n' "$line" >> "$log"
      id=$(printf '%s' "$line" | sed -n 's/.*"request_id": *"\([^"]*\)".*/\1/p')
      printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
      ;;
    SLEEP) sleep "$arg" ;;
    EXIT) exit "$arg" ;;
  esac
done < "$plan"
