# SPDX-License-Identifier: GPL-2.0
#
# cg-cost.awk: instructions a shared object adds per call of its functions,
# from a callgrind output file (--dump-instr=no, the default; event Ir).
#
#   awk -v obj=libshiftu -v fns=shiftu_post_send,shiftu_poll_cq \
#       -f cg-cost.awk callgrind.out
#
# prints, per function FN of fns that was called:
#   FN calls=N self=S internal=I external=E added_per_call=A
# where S is FN's own Ir (inlined helpers included), I what the calls FN
# makes into functions of an object whose path contains obj (the library's
# out-of-line helpers) cost in that object: counted as added, E the rest of
# its calls' inclusive Ir (the provider's verb, also when a helper calls it:
# not added), N the calls into FN from anywhere, and A = (S + I) / N.
# Callgrind gives a call's inclusive cost, not how much of it a helper's
# own callees took: a helper's calls are split in the proportion of its
# totals over the whole run (exact for a helper called from one place).
# Callgrind counts a tail jump into another function as a call, so a jmp
# to the provider is in E.
#
# The file's name compression ("fn=(12) name", then "fn=(12)") is undone
# per kind: objects (ob, cob), files (fl, fi, fe, cfi, cfl), functions
# (fn, cfn).

function name(kind, v,    id, rest)
{
	if (v ~ /^\([0-9]+\)/) {
		id = v
		sub(/\).*/, "", id)
		id = substr(id, 2)
		rest = v
		sub(/^\([0-9]+\) ?/, "", rest)
		if (rest != "")
			names[kind, id] = rest
		return names[kind, id]
	}
	return v
}

BEGIN {
	n = split(fns, want, ",")
	for (i = 1; i <= n; i++)
		wanted[want[i]] = 1
}

/^ob=/	{ ob = name("ob", substr($0, 4)); next }
/^cob=/	{ cob = name("ob", substr($0, 5)); next }
/^fn=/	{ fn = name("fn", substr($0, 4)); fnob[fn] = ob; cob = ""; fns_seen[fn] = 1; next }
/^cfn=/	{ cfn = name("fn", substr($0, 5)); next }
/^calls=/ {
	split(substr($0, 7), c, " ")
	ncalls[cfn] += c[1]
	incall = 1
	next
}
/^[0-9+*-]/ {
	cost = $2 + 0
	if (!incall) {
		self[fn] += cost
		next
	}
	incall = 0
	callee_ob = cob != "" ? cob : ob
	if (index(callee_ob, obj))
		edge[fn, cfn] += cost
	else
		outside[fn] += cost
	callees[fn] = callees[fn] SUBSEP cfn
	total[fn] += cost
	cob = ""
	next
}

# own[f]: the part of f's inclusive cost spent in the library itself
function own_of(f,    k, m, parts, c, o, seen) {
	if (f in own)
		return own[f]
	own[f] = self[f]		# a cycle counts its own cost once
	o = self[f]
	m = split(callees[f], parts, SUBSEP)
	for (k = 2; k <= m; k++) {
		c = parts[k]
		if ((c in seen) || !((f, c) in edge))
			continue
		seen[c] = 1
		if (total[c] + self[c] > 0)
			o += edge[f, c] * own_of(c) / (total[c] + self[c])
	}
	own[f] = o
	return o
}

END {
	for (i = 1; i <= n; i++) {
		f = want[i]
		if (!ncalls[f])
			continue
		if (!index(fnob[f], obj))
			continue
		internal[f] = own_of(f) - self[f]
		external[f] = total[f] - internal[f]
		printf "%s calls=%d self=%d internal=%d external=%d added_per_call=%.1f\n",
		       f, ncalls[f], self[f], internal[f], external[f],
		       (self[f] + internal[f]) / ncalls[f]
	}
}
