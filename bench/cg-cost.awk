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
# where S is FN's own Ir (inlined helpers included), I the inclusive Ir of
# the calls FN makes into functions of an object whose path contains obj
# (the library's out-of-line helpers: counted as added), E the inclusive Ir
# of its calls elsewhere (the provider's verb: not added), N the calls
# into FN from anywhere, and A = (S + I) / N.  Callgrind counts a tail jump
# into another function as a call, so a jmp to the provider is in E.
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
/^fn=/	{ fn = name("fn", substr($0, 4)); fnob[fn] = ob; cob = ""; next }
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
		internal[fn] += cost
	else
		external[fn] += cost
	cob = ""
	next
}

END {
	for (i = 1; i <= n; i++) {
		f = want[i]
		if (!ncalls[f])
			continue
		if (!index(fnob[f], obj))
			continue
		printf "%s calls=%d self=%d internal=%d external=%d added_per_call=%.1f\n",
		       f, ncalls[f], self[f], internal[f], external[f],
		       (self[f] + internal[f]) / ncalls[f]
	}
}
