#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# ynl_cmp.py SPEC OP KIND YNL_JSON SHIFTMON_JSON: compares the rows the YNL
# CLI decoded for OP (a dump's list or a do's one row) with the rows of KIND
# (ports, pairs, paths) that "shiftmon -j show" printed, and checks that
# each decoded row has only attributes the spec lists for OP's reply.  Rows
# are matched by path_index for paths, port_index otherwise; a do must
# match one shiftmon row, a dump all of them.  Values are compared as the
# same numbers and names: YNL prints enums as "active-defer", a GUID with
# display-hint hex, a GID as IPv6; shiftmon as ACTIVE_DEFER, 0x%016x and
# 32 hex digits.  Exit 0 if they agree, 1 (with the differences) if not.
import ipaddress
import json
import sys

import yaml


def main():
    spec_path, op_name, kind, ynl_path, sm_path = sys.argv[1:6]
    with open(spec_path) as f:
        spec = yaml.safe_load(f)
    op = next(o for o in spec['operations']['list'] if o['name'] == op_name)
    attrs = {a['name']: a for s in spec['attribute-sets'] if s['name'] == op['attribute-set']
             for a in s['attributes']}
    listed = set(op.get('do', op.get('dump'))['reply']['attributes'])

    with open(ynl_path) as f:
        ynl = json.loads(f.read().strip().splitlines()[-1])
    with open(sm_path) as f:
        sm = json.load(f)[kind]
    dump = isinstance(ynl, list)
    ynl = ynl if dump else [ynl]
    key = 'path_index' if kind == 'paths' else 'port_index'

    def norm(name, v):
        a = attrs.get(name.replace('_', '-'), {})
        if v is None or v == []:
            return None
        if a.get('display-hint') == 'hex':
            return int(v, 16) if isinstance(v, str) else v
        if a.get('display-hint') == 'ipv6':
            return str(ipaddress.IPv6Address(v))
        if isinstance(v, list):
            return sorted(str(x).upper().replace('-', '_') for x in v)
        if isinstance(v, dict):
            return {k.upper().replace('-', '_'): x for k, x in v.items()}
        if 'enum' in a and isinstance(v, str):
            return v.upper().replace('-', '_')
        return v

    bad = []
    rows = {}
    for r in ynl:
        extra = set(r) - listed
        if extra:
            bad.append(f'{op_name} reply has {sorted(extra)}, which the spec does not list')
        r = {k.replace('-', '_'): norm(k, v) for k, v in r.items()}
        rows[r[key]] = {k: v for k, v in r.items() if v is not None}
    want = {}
    for r in sm:
        r = {k: norm(k, v) for k, v in r.items()}
        want[r[key]] = {k: v for k, v in r.items() if v is not None}
    if not dump:
        want = {k: v for k, v in want.items() if k in rows}
    if set(rows) != set(want):
        bad.append(f'{kind}: YNL has {key} {sorted(rows)}, shiftmon {sorted(want)}')
    for k in sorted(set(rows) & set(want)):
        for f in sorted(set(rows[k]) | set(want[k])):
            y, s = rows[k].get(f), want[k].get(f)
            if y != s:
                bad.append(f'{kind} {key}={k} {f}: YNL {y!r}, shiftmon {s!r}')
    for b in bad:
        print('# ' + b)
    n = sum(len(r) for r in rows.values())
    print(f'# {op_name}: {len(rows)} rows, {n} values agree with shiftmon' if not bad else
          f'# {op_name}: {len(bad)} differences')
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
