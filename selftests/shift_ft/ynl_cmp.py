#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# ynl_cmp.py SPEC YNL_DIR SHIFTMON: for each line of stdin, "OP KIND
# do|dump [JSON]", compares the rows YNL's library (YNL_DIR/lib, what
# cli.py runs) decodes for OP (a dump's list or a do's one row) with the
# rows of KIND (ports, pairs, paths) that "SHIFTMON -j show KIND" prints,
# and checks that each decoded row has only attributes the spec lists for
# OP's reply.  Rows are matched by path_index for paths, port_index
# otherwise; a do must match one shiftmon row, a dump all of them.  Values
# are compared as the same numbers and names: YNL gives enums as
# "active-defer", a GUID with display-hint hex, a GID as IPv6; shiftmon as
# ACTIVE_DEFER, 0x%016x and 32 hex digits.  A disagreement is tried again
# twice (a row may change between the two reads).  All in one process: a
# Python start costs seconds on a loaded lab guest, and a test made of one
# per comparison took four minutes.  Exit 0 if every line agreed, 1 (with
# the differences) if not.
import ipaddress
import json
import subprocess
import sys

import yaml


def compare(spec, op_name, kind, ynl, sm):
    """The differences between YNL's decoded reply @ynl and shiftmon's
    rows @sm, and a summary line."""
    op = next(o for o in spec['operations']['list'] if o['name'] == op_name)
    attrs = {a['name']: a for s in spec['attribute-sets'] if s['name'] == op['attribute-set']
             for a in s['attributes']}
    listed = set(op.get('do', op.get('dump'))['reply']['attributes'])

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
    n = sum(len(r) for r in rows.values())
    return bad, (f'# {op_name}: {len(rows)} rows, {n} values agree with shiftmon' if not bad else
                 f'# {op_name}: {len(bad)} differences')


def batch(spec_path, ynl_dir, shiftmon):
    sys.path.insert(0, ynl_dir)
    from lib import YnlFamily

    with open(spec_path) as f:
        spec = yaml.safe_load(f)
    fam = YnlFamily(spec_path, '')
    ok = True
    for text in sys.stdin:
        words = text.split(None, 3)
        if not words:
            continue
        op_name, kind, mode = words[:3]
        attrs = json.loads(words[3]) if len(words) > 3 else {}
        for _ in range(3):
            # through JSON, as cli.py --output-json prints it
            reply = fam.dump(op_name, attrs) if mode == 'dump' else fam.do(op_name, attrs)
            ynl = json.loads(json.dumps(reply, default=lambda o: o.hex() if isinstance(o, bytes)
                                        else list(o)))
            sm = json.loads(subprocess.run([shiftmon, '-j', 'show', kind], check=True,
                                           capture_output=True, text=True).stdout)[kind]
            bad, line = compare(spec, op_name, kind, ynl, sm)
            if not bad:
                break
        for b in bad:
            print('# ' + b)
        print(line)
        if bad:
            print(f'# {op_name} ({mode} {kind} {attrs}): YNL and shiftmon disagree')
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    batch(*sys.argv[1:4])
