#!/usr/bin/env bash
# Sluice replicas on one machine, without containers: PostgreSQL for the
# consumer progress, N flightd processes over one warehouse (the demo's),
# and nginx in front of them as the one gRPC address. docs/DEPLOY.md,
# "Replicas on one machine", walks through it.
#
#   make replicas                 # or: deploy/local/replicas.sh start [N]
#   deploy/local/replicas.sh stop
#
# Needs flightd built (make build), PostgreSQL's server binaries (Debian:
# postgresql) and nginx (Debian: nginx); it installs the two with apt-get
# when they are missing and it runs as root. Everything it writes is under
# .tmp/replicas: the database, the warehouse, the logs.
set -euo pipefail
cd "$(dirname "$0")/../.."

STATE=${STATE:-.tmp/replicas}
FLIGHTD=${FLIGHTD:-.tmp/bin/flightd}
FRONT_PORT=${FRONT_PORT:-8814}
FIRST_PORT=${FIRST_PORT:-8815}
PG_PORT=${PG_PORT:-54329}

pg_bin() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x $d/pg_ctl ]] && { echo "$d"; return; }
	done
	command -v pg_ctl >/dev/null && { dirname "$(command -v pg_ctl)"; return; }
	return 1
}

need() { # need <command or test> <apt package>
	if ! eval "$1" >/dev/null 2>&1; then
		if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
			echo "installing $2 (apt-get)"
			apt-get install -y -q "$2" >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q "$2" >/dev/null; }
		else
			echo "replicas: $2 is missing: install it (Debian: apt-get install $2)" >&2
			exit 1
		fi
	fi
}

# as_pg runs a command as the postgres user when root (PostgreSQL refuses
# to run as root).
as_pg() {
	if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

stop() {
	local f
	for f in "$STATE"/flightd-*.pid; do
		[[ -e $f ]] && kill "$(cat "$f")" 2>/dev/null || true
		rm -f "$f"
	done
	if [[ -e $STATE/nginx.pid ]]; then
		kill "$(cat "$STATE/nginx.pid")" 2>/dev/null || true
	fi
	if [[ -d $STATE/pg ]] && bin=$(pg_bin); then
		as_pg "$bin/pg_ctl" -D "$STATE/pg" -m fast stop >/dev/null 2>&1 || true
	fi
	echo "stopped"
}

wait_file() { # wait_file <file> <what> <log>
	local i
	for i in $(seq 1 300); do
		[[ -s $1 ]] && return 0
		sleep 0.1
	done
	echo "replicas: $2 did not start; its log, $3:" >&2
	tail -20 "$3" >&2
	exit 1
}

start() {
	local n=${1:-3}
	[[ -x $FLIGHTD ]] || { echo "replicas: $FLIGHTD is missing: run make build" >&2; exit 1; }
	need pg_bin postgresql
	need "command -v nginx" nginx
	local bin
	bin=$(pg_bin)
	mkdir -p "$STATE"
	local abs
	abs=$(cd "$STATE" && pwd)

	# PostgreSQL: a cluster of its own on a loopback port.
	if [[ ! -d $STATE/pg ]]; then
		mkdir -p "$STATE/pg"
		[[ $(id -u) == 0 ]] && chown postgres "$STATE/pg" && chmod o+x "$abs" "$(dirname "$abs")"
		as_pg "$bin/initdb" -D "$abs/pg" -U sluice --auth=trust >/dev/null
	fi
	as_pg "$bin/pg_ctl" -D "$abs/pg" -l "$abs/pg/log" -w \
		-o "-p $PG_PORT -k $abs/pg -c listen_addresses=127.0.0.1" start >/dev/null
	local dsn="postgres://sluice@127.0.0.1:$PG_PORT/postgres?sslmode=disable"

	# The replicas, each advertising its own address and listing all.
	local peers="" i port
	for ((i = 0; i < n; i++)); do
		peers+="${peers:+,}grpc://127.0.0.1:$((FIRST_PORT + i))"
	done
	local upstream=""
	for ((i = 0; i < n; i++)); do
		port=$((FIRST_PORT + i))
		local demo=()
		((i == 0)) && demo=(--demo)
		rm -f "$STATE/flightd-$i.ready"
		"$FLIGHTD" "${demo[@]}" --warehouse "$STATE/warehouse" --listen "127.0.0.1:$port" \
			--advertise "grpc://127.0.0.1:$port" --peers "$peers" --progress-dsn "$dsn" \
			--ready-file "$STATE/flightd-$i.ready" >"$STATE/flightd-$i.log" 2>&1 &
		echo $! >"$STATE/flightd-$i.pid"
		# The first creates the demo table; the others start once it is there.
		wait_file "$STATE/flightd-$i.ready" "flightd $i" "$STATE/flightd-$i.log"
		upstream+="    server 127.0.0.1:$port;"$'\n'
	done

	# nginx: one HTTP/2 address, each gRPC call sent to a replica in turn.
	cat >"$STATE/nginx.conf" <<CONF
daemon on;
pid $abs/nginx.pid;
error_log $abs/nginx.log warn;
worker_processes 1;
events {}
http {
  access_log off;
  client_body_temp_path $abs/nginx-tmp;
  upstream flightd {
$upstream    keepalive 16;
  }
  server {
    listen 127.0.0.1:$FRONT_PORT http2;
    location / {
      grpc_pass grpc://flightd;
      grpc_read_timeout 1h;
      grpc_send_timeout 1h;
      grpc_next_upstream error timeout;
    }
  }
}
CONF
	mkdir -p "$STATE/nginx-tmp"
	nginx -c "$abs/nginx.conf" -p "$abs" -e "$abs/nginx.log"
	echo "$n replicas: $peers"
	echo "one address: grpc://127.0.0.1:$FRONT_PORT (nginx); consumer progress in $dsn"
	echo "stop them: deploy/local/replicas.sh stop"
}

case ${1:-start} in
start) start "${2:-3}" ;;
stop) stop ;;
*)
	echo "usage: $0 start [N] | stop" >&2
	exit 2
	;;
esac
