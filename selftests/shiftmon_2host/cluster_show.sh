#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# cluster_show: `shiftmon show --cluster` lists both hosts' ports as the
# agents published them, as a table and as JSON, and follows a pull.
set -e
. "$(dirname "$0")/lib.sh"

smr_setup
ft_require_cmd jq
smr_redis_start
smr_agent_start
smr_agent_peer_start
smr_wait_store host2 rxe1/1 ACTIVE

out=$("$SM" show --cluster --store "$SMR_STORE")
echo "$out" | sed 's/^/# /'
for hp in host1:rxe0/1:eth0:10.0.0.1 host1:rxe1/1:eth1:10.0.1.1 \
	  host2:rxe0/1:eth0:10.0.0.2 host2:rxe1/1:eth1:10.0.1.2; do
	IFS=: read -r h p nd ip <<< "$hp"
	echo "$out" | grep -Eq "^$h +$p +ACTIVE +ETHERNET +$nd .*::ffff:$ip" ||
		smr_fail "show --cluster: no line for $h $p"
done
[ "$(echo "$out" | wc -l)" -eq 5 ] || smr_fail "show --cluster: expected a header and 4 ports"

# the same through SHIFT_STORE, as JSON
SHIFT_STORE=$SMR_STORE "$SM" -j show --cluster > "$FT_TMP/json"
jq -e '.version == 1 and (.hosts | length) == 2 and
       ([.hosts[].ports[]] | length) == 4 and
       (.hosts[] | select(.host == "host2") | .ports[] |
	select(.port == "rxe0/1" and .dev == "rxe0" and .port_num == 1 and
	       .netdev == "eth0" and .link_layer == "ETHERNET") |
	.gids | index("::ffff:10.0.0.2") != null)' "$FT_TMP/json" > /dev/null ||
	{ sed 's/^/# json: /' "$FT_TMP/json"; smr_fail "show --cluster -j"; }

lab-peer "lab-link eth0 off" || fail "lab-link on host 2"
smr_wait_store host2 rxe0/1 DOWN
out=$("$SM" show --cluster --store "$SMR_STORE")
echo "$out" | grep -Eq "^host2 +rxe0/1 +DOWN " || smr_fail "show --cluster: host2 rxe0/1 not DOWN"
n=$(SHIFT_STORE=$SMR_STORE "$SM" -j show --cluster |
    jq '.hosts[] | select(.host == "host2") | .ports[] | select(.port == "rxe0/1") | .down_count')
[ "$n" -ge 1 ] || smr_fail "host2 rxe0/1 down_count $n"
lab-peer "lab-link eth0 on"
smr_wait_store host2 rxe0/1 ACTIVE 8
