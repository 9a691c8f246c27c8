#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# store_tls: the TLS deployment of the cluster store that
# Documentation/trust.rst describes works as written: hiredis 0.14 has no
# TLS, so a local tunnel (socat, and stunnel4 when installed) carries
# shiftmon's (and libshiftu's) plain TCP to redis-server's own TLS port;
# the tunnel checks the server's certificate and shows its own, and the
# store's ACL user is still asked for.  A client without the tunnel, a
# tunnel that trusts another CA or expects another name, and a tunnel
# without a client certificate all fail.
#
#     shiftmon show --cluster ──TCP 127.0.0.1:$LOCAL──► socat ──TLS──► redis-server
#       (AUTH shiftagent,                   (cafile: ca.crt,       --port 0
#        --store-auth-file)                  cert: client.crt)     --tls-port $TLS
#                                                                 --tls-auth-clients yes
set -e -o pipefail

top=$(cd -P "$(dirname "$0")/../.." && pwd)
sm=$top/tools/shiftmon/shiftmon
ksft_skip=4
skip() { echo "# SKIP: $*"; exit $ksft_skip; }
fail() { echo "# FAIL: $*"; exit 1; }
log() { echo "# $*"; }

for c in redis-server redis-cli socat openssl; do
	command -v "$c" > /dev/null || skip "$c not installed"
done
[ -x "$sm" ] || skip "shiftmon not built (make -C $top/tools/shiftmon)"

tmp=$(mktemp -d)
pids=()
cleanup()
{
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2> /dev/null || :
	done
	wait 2> /dev/null || :
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"

# a CA, the server's certificate (127.0.0.1), the client's, and another CA
ossl() { openssl "$@" > /dev/null 2>&1 || fail "openssl $1 failed"; }
for ca in ca other; do
	ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=shift test $ca" \
		-keyout "$ca.key" -out "$ca.crt"
done
for who in server client; do
	ossl req -newkey rsa:2048 -nodes -subj "/CN=$who" -keyout "$who.key" -out "$who.csr"
	printf 'subjectAltName=IP:127.0.0.1\n' > "$who.ext"
	ossl x509 -req -in "$who.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
		-extfile "$who.ext" -out "$who.crt"
done
chmod 600 ./*.key

tls=$((20000 + RANDOM % 10000))
local_port=$((tls + 1))
pass=Tls-Agent-S3cret
redis-server --port 0 --bind 127.0.0.1 --tls-port "$tls" \
	--tls-cert-file server.crt --tls-key-file server.key \
	--tls-ca-cert-file ca.crt --tls-auth-clients yes \
	--save '' --appendonly no --dir "$tmp" --daemonize no \
	--user default off \
	--user shiftagent on ">$pass" '~shift:v1:*' '&shift:v1:events' \
		+ping +multi +exec +del +sadd +smembers +hset +hdel +hgetall \
		+publish +subscribe > redis.log 2>&1 &
pids+=($!)

# tunnel NAME PORT CAFILE [CERT]: the client side of the TLS deployment
tunnel()
{
	local name=$1 port=$2 ca=$3 cert=${4:+,cert=$4,key=${4%.crt}.key}
	socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" \
		"OPENSSL:127.0.0.1:$tls,cafile=$ca,verify=1$cert" 2> "$name.log" &
	pids+=($!)
}
tunnel good "$local_port" ca.crt client.crt
tunnel wrongca "$((local_port + 1))" other.crt client.crt
tunnel nocert "$((local_port + 2))" ca.crt

# stunnel_tunnel NAME PORT CHECK: trust.rst's stunnel4 configuration,
# checking the server's certificate for CHECK (checkIP = 127.0.0.1, or
# checkHost = NAME)
stunnel_tunnel()
{
	cat > "$1.conf" <<-EOF
	foreground = yes
	pid =
	[shift-store]
	client = yes
	accept = 127.0.0.1:$2
	connect = 127.0.0.1:$tls
	CAfile = $tmp/ca.crt
	verifyChain = yes
	$3
	cert = $tmp/client.crt
	key = $tmp/client.key
	EOF
	stunnel "$1.conf" > "$1.log" 2>&1 &
	pids+=($!)
}
have_stunnel=0
if command -v stunnel > /dev/null; then
	have_stunnel=1
	stunnel_tunnel stunnel "$((local_port + 3))" "checkIP = 127.0.0.1"
	stunnel_tunnel stunnel_name "$((local_port + 4))" "checkHost = store.example"
fi

# the server answers through the good tunnel (the default user is off)
for _ in $(seq 100); do
	redis-cli -p "$local_port" ping 2> /dev/null | grep -q NOAUTH && break
	sleep 0.05
done
redis-cli -p "$local_port" ping 2>&1 | grep -q NOAUTH ||
	{ sed 's/^/# /' redis.log good.log; fail "redis-server does not answer through the tunnel"; }

printf 'shiftagent:%s\n' "$pass" > agent.auth
chmod 600 agent.auth

# expect RC NAME ARGS...: shiftmon show --cluster ARGS exits RC
expect()
{
	local want=$1 name=$2 rc=0
	shift 2
	timeout 10 "$sm" show --cluster -j "$@" > "$name.out" 2> "$name.err" || rc=$?
	[ "$rc" = "$want" ] ||
		{ sed 's/^/# /' "$name.out" "$name.err"; fail "$name: exit $rc, expected $want"; }
	log "$name: exit $rc $(head -c 200 "$name.err" | tr '\n' ' ')"
}

expect 0 tunnel_auth --store "redis://127.0.0.1:$local_port" --store-auth-file agent.auth
grep -q '"hosts":\[\]' tunnel_auth.out || fail "no cluster read through the tunnel: $(cat tunnel_auth.out)"
expect 1 tunnel_noauth --store "redis://127.0.0.1:$local_port"
grep -q 'NOAUTH' tunnel_noauth.err || fail "tunnel_noauth: no NOAUTH: $(cat tunnel_noauth.err)"
# plain TCP to the TLS port: no Redis there
expect 1 plain --store "redis://127.0.0.1:$tls" --store-auth-file agent.auth
# a tunnel that trusts another CA does not talk to this server
expect 1 wrong_ca --store "redis://127.0.0.1:$((local_port + 1))" --store-auth-file agent.auth
grep -qi 'certificate verify failed\|verify' wrongca.log ||
	{ sed 's/^/# /' wrongca.log; fail "wrong_ca: socat did not refuse the server's certificate"; }
# a client without a certificate is not let in
expect 1 no_cert --store "redis://127.0.0.1:$((local_port + 2))" --store-auth-file agent.auth
if [ "$have_stunnel" = 1 ]; then
	for _ in $(seq 50); do
		redis-cli -p "$((local_port + 3))" ping 2> /dev/null | grep -q NOAUTH && break
		sleep 0.1
	done
	expect 0 stunnel_auth --store "redis://127.0.0.1:$((local_port + 3))" --store-auth-file agent.auth
	expect 1 stunnel_wrong_name --store "redis://127.0.0.1:$((local_port + 4))" --store-auth-file agent.auth
else
	log "stunnel4 not installed: its configuration not tried"
fi
if grep -r -l "$pass" ./*.out ./*.err ./*.log; then
	fail "the password is in a log"
fi
log "through the TLS tunnel: AUTH works, NOAUTH without it; plain TCP, another CA, another name and no client certificate fail"
