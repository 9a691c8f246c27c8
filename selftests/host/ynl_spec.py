#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# ynl_spec: Documentation/netlink/specs/shift_ft.yaml is valid against the
# kernel's schema, names every netlink constant of uapi/shift_ft.h with the
# header's name and value (and misses none), and gives each command the
# handlers, admin flag and request policy that kmod/netlink.c registers.
#
# Nothing is listed here: the header's names come from the compiler (its
# macros and enum blocks, their values printed by a program built against
# it), the spec's C names from ynl-gen-c.py's own naming, the spec's
# policies from ynl-gen-c.py --mode kernel, and the module's from
# netlink.c's policy arrays and ops table.  The kernel's YNL tools and
# schemas come from linux-source-6.12 (selftests/lab/get-ynl.sh).
#
# Environment: YNL_DIR (default build/ynl), SHIFT_FT_SPEC,
# SHIFT_FT_NETLINK_C and SHIFT_FT_UAPI (another spec, module source or
# header directory: how the test is shown to fail on a disagreement).

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

KSFT_SKIP = 4
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
YNL_DIR = os.environ.get('YNL_DIR', os.path.join(TOP, 'build', 'ynl'))
SPEC = os.environ.get('SHIFT_FT_SPEC',
                      os.path.join(TOP, 'Documentation/netlink/specs/shift_ft.yaml'))
NETLINK_C = os.environ.get('SHIFT_FT_NETLINK_C', os.path.join(TOP, 'kmod/netlink.c'))
UAPI = os.environ.get('SHIFT_FT_UAPI', os.path.join(TOP, 'uapi'))
CC = os.environ.get('CC', 'cc')


def skip(why):
    print('TAP version 13')
    print('1..0 # SKIP ' + why)
    sys.exit(KSFT_SKIP)


# ---- C text: comments, macros, initializers, expressions ----

def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def object_macros(text):
    """The object-like #defines of a C file, continuation lines joined."""
    text = text.replace('\\\n', ' ')
    macros = {}
    for m in re.finditer(r'^\s*#\s*define\s+(\w+)(?!\()[ \t]*(.*)$', text, re.M):
        macros[m.group(1)] = m.group(2).strip()
    return macros


def expand(text, macros):
    for _ in range(10):
        new = re.sub(r'\b(\w+)\b', lambda m: macros.get(m.group(1), m.group(1)), text)
        if new == text:
            return text
        text = new
    raise ValueError('macro expansion does not end')


def split_top(text, sep=','):
    """Split at separators outside (), [] and {}."""
    parts, depth, cur = [], 0, ''
    for ch in text:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ''
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def braced(text, start):
    """The text inside the braces that open at or after @start."""
    i = text.index('{', start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == '{':
            depth += 1
        elif text[j] == '}':
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    raise ValueError('unbalanced braces')


def ceval(expr, consts):
    """An integer C constant expression over the header's constants."""
    expr = re.sub(r'\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b', r'\1', expr.strip())
    expr = re.sub(r'\b([A-Za-z_]\w*)\b',
                  lambda m: str(consts[m.group(1)]) if m.group(1) in consts else m.group(1),
                  expr)
    if not re.fullmatch(r'[0-9a-fA-FxX\s()+\-*|&<>~]*', expr):
        raise ValueError(f'cannot evaluate "{expr}"')
    return eval(expr, {'__builtins__': {}})


def policy_entry(value, consts):
    """A policy entry as a canonical (type, checks) pair."""
    value = ' '.join(value.split())
    m = re.fullmatch(r'NLA_POLICY_(RANGE|MIN|MAX|MASK)\((\w+),(.*)\)', value)
    if m:
        kind, typ, args = m.group(1), m.group(2), split_top(m.group(3))
        n = [ceval(a, consts) for a in args]
        if kind == 'RANGE':
            return (typ, (('max', n[1]), ('min', n[0])))
        return (typ, ((kind.lower(), n[0]),))
    m = re.fullmatch(r'NLA_POLICY_EXACT_LEN\((.*)\)', value)
    if m:
        return ('NLA_BINARY', (('exact-len', ceval(m.group(1), consts)),))
    m = re.fullmatch(r'\{(.*)\}', value)
    if m:
        fields = {}
        for f in split_top(m.group(1)):
            k, v = (x.strip() for x in f.split('=', 1))
            fields[k.lstrip('.')] = v
        typ = fields.pop('type', 'NLA_UNSPEC')
        checks = tuple(sorted((k, ceval(v, consts)) for k, v in fields.items()))
        return (typ, checks)
    raise ValueError(f'cannot read policy entry "{value}"')


def policies(text, consts):
    """Every struct nla_policy array of a C file: name -> {attr: entry}."""
    out = {}
    for m in re.finditer(r'struct\s+nla_policy\s+(\w+)\s*\[[^\]]*\]\s*=', text):
        pol = {}
        for e in split_top(braced(text, m.end())):
            em = re.fullmatch(r'\[\s*(\w+)\s*\]\s*=\s*(.*)', e, re.S)
            if not em:
                raise ValueError(f'{m.group(1)}: cannot read "{e}"')
            pol[em.group(1)] = policy_entry(em.group(2), consts)
        out[m.group(1)] = pol
    return out


def ops_table(text):
    """The struct genl_ops array of a C file: cmd -> its fields."""
    m = re.search(r'struct\s+genl_ops\s+\w+\s*\[[^\]]*\]\s*=', text)
    if not m:
        raise ValueError('no struct genl_ops array')
    ops = {}
    for block in split_top(braced(text, m.end())):
        fields = {}
        for f in split_top(block.strip()[1:-1]):
            k, v = (x.strip() for x in f.split('=', 1))
            fields[k.lstrip('.')] = ' '.join(v.split())
        ops[fields['cmd']] = fields
    return ops


# ---- the header, as the compiler sees it ----

def header_constants(tmp):
    """name -> value of every SHIFT_FT_ macro and enum constant, and the
    header's enums: enum name -> [constant names]."""
    hdr = os.path.join(UAPI, 'shift_ft.h')
    cpp = [CC, '-E', '-I', UAPI, hdr]
    macros = subprocess.run(cpp[:1] + ['-dM'] + cpp[1:], check=True,
                            capture_output=True, text=True).stdout
    names = [m.group(1) for m in re.finditer(r'^#define (SHIFT_FT_\w+) \S', macros, re.M)]
    body = subprocess.run(cpp + ['-P'], check=True, capture_output=True, text=True).stdout
    enums = {}
    for m in re.finditer(r'\benum\s+(\w+)\s*\{([^}]*)\}', body):
        members = [e.split('=')[0].strip() for e in split_top(m.group(2))]
        enums[m.group(1)] = members
        names += members
    src = os.path.join(tmp, 'uapi_names.c')
    with open(src, 'w') as f:
        f.write('#include <stdio.h>\n#include <shift_ft.h>\n'
                '#define P(x) _Generic((x) + 0, char *: printf("%s s %s\\n", #x, '
                '(const char *)(uintptr_t)(x)), default: printf("%s i %lld\\n", #x, '
                '(long long)(x)))\n#include <stdint.h>\nint main(void)\n{\n')
        for n in names:
            f.write(f'\tP({n});\n')
        f.write('\treturn 0;\n}\n')
    exe = os.path.join(tmp, 'uapi_names')
    subprocess.run([CC, '-w', '-I', UAPI, '-o', exe, src], check=True)
    consts = {}
    for line in subprocess.run([exe], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        name, kind, value = line.split(' ', 2)
        consts[name] = value if kind == 's' else int(value)
    return consts, enums


# ---- the checks ----

class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def result(self, name, problems):
        self.n += 1
        for p in problems:
            for line in p.splitlines():
                print('# ' + line)
        if problems:
            self.failed += 1
            print(f'not ok {self.n} {name}')
        else:
            print(f'ok {self.n} {name}')


def check_schema(spec, schema_dir):
    import jsonschema
    import yaml

    with open(os.path.join(schema_dir, spec.get('protocol', 'genetlink') + '.yaml')) as f:
        schema = yaml.safe_load(f)
    try:
        jsonschema.validate(spec, schema)
    except jsonschema.ValidationError as e:
        return [f'schema: {e.message} at {"/".join(str(p) for p in e.absolute_path)}']
    return []


def c_upper(name):
    return name.upper().replace('-', '_')


def check_uapi(fam, consts, enums):
    """The spec's C names (as ynl-gen-c names them) against the header."""
    bad = []
    compared = 0
    claimed = {}	# header enum -> names the spec accounts for

    def want(cname, value, what, enum=None):
        nonlocal compared
        compared += 1
        if enum is not None:
            claimed.setdefault(enum, set()).add(cname)
        if cname not in consts:
            bad.append(f'{what}: {cname} is not in shift_ft.h')
        elif consts[cname] != value:
            bad.append(f'{what}: {cname} is {consts[cname]!r} in shift_ft.h, {value!r} in the spec')

    want(fam.fam_key, fam['name'], 'family name')
    want(fam.ver_key, fam.get('version', 1), 'family version')
    for grp in fam.mcgrps['list']:
        cname = c_upper(grp.get('c-define-name', f'{fam.ident_name}-mcgrp-{grp["name"]}'))
        want(cname, grp['name'], 'multicast group')

    for d in fam['definitions']:
        if d['type'] == 'const':
            want(c_upper(f'{fam.ident_name}-{d["name"]}'), d['value'], 'const ' + d['name'])
            continue
        es = fam.consts[d['name']]
        enum = d.get('enum-name')
        for e in es.entries.values():
            want(e.c_name, e.user_value(), f'{d["type"]} {d["name"]}', enum)
        pfx = c_upper(es.value_pfx)
        if d['type'] == 'flags':
            # the header's flag sets are #defines with an all-flags mask
            mask = 0
            for e in es.entries.values():
                mask |= e.user_value()
            want(pfx + 'ALL', mask, f'flags {d["name"]} (all-flags mask)')
            extra = sorted(n for n in consts if n.startswith(pfx) and
                           n != pfx + 'ALL' and n not in {e.c_name for e in es.entries.values()})
            if extra:
                bad.append(f'flags {d["name"]}: shift_ft.h has {", ".join(extra)}, the spec does not')
        elif d.get('render-max'):
            n = len(es.entries)
            want('__' + pfx + 'MAX', n, f'enum {d["name"]} count', enum)
            want(pfx + 'MAX', n - 1, f'enum {d["name"]} max', enum)

    for aset in fam.attr_sets.values():
        enum = aset.yaml.get('enum-name')
        attrs = [a for _, a in aset.items()]
        last = 0
        for attr in attrs:
            want(attr.enum_name, attr.value, f'attribute set {aset.name}', enum)
            last = max(last, attr.value)
        want(aset.cnt_name, last + 1, f'attribute set {aset.name} count', enum)
        want(aset.max_name, last, f'attribute set {aset.name} max', enum)
        if min(a.value for a in attrs) == 1:
            want(c_upper(aset.yaml['name-prefix']) + 'UNSPEC', 0,
                 f'attribute set {aset.name} unspec', enum)

    cmds = fam['operations'].get('enum-name')
    events = {}
    last = 0
    for op in fam.msgs.values():
        if op.is_async:
            # a from-kernel message named like a request ("path-del") is
            # "<name>-ntf" in the spec
            cname = re.sub(r'_NTF$', '', op.enum_name)
            if cname != op.enum_name and cname not in {o.enum_name for o in fam.msgs.values()}:
                bad.append(f'event {op.name}: no request {cname} to share a name with')
            want(cname, op.rsp_value, f'event {op.name}', cmds)
            events[op.rsp_value] = op
            last = max(last, op.rsp_value)
        else:
            want(op.enum_name, op.req_value, f'command {op.name}', cmds)
            last = max(last, op.req_value)
    for op in fam.msgs.values():
        if op.is_async:
            continue
        for mode in ('do', 'dump'):
            reply = op.yaml.get(mode, {}).get('reply')
            if not reply:
                continue
            ev = events.get(op.rsp_value)
            if not ev:
                bad.append(f'command {op.name}: its {mode} reply {op.rsp_value} is no event of the spec')
            elif set(reply['attributes']) | {'event'} != set(ev.yaml['event']['attributes']):
                bad.append(f'command {op.name}: its {mode} reply and event {ev.name} differ '
                           f'beyond the event attribute')
    want(c_upper(fam['cmd-cnt-name']), last + 1, 'commands count', cmds)
    want(c_upper(fam['cmd-max-name']), last, 'commands max', cmds)
    want(fam.op_prefix + 'UNSPEC', 0, 'commands unspec', cmds)

    # and the other way: nothing in the header's enums that the spec misses
    for enum, names in sorted(claimed.items()):
        if enum not in enums:
            bad.append(f'enum {enum} is not in shift_ft.h')
            continue
        missing = [n for n in enums[enum] if n not in names]
        if missing:
            bad.append(f'enum {enum}: {", ".join(missing)} not in the spec')
    unclaimed = sorted(set(enums) - set(claimed))
    if unclaimed:
        bad.append(f'shift_ft.h enums the spec does not describe: {", ".join(unclaimed)}')
    print(f'# {compared} names of the spec compared, {len(claimed)} enums of shift_ft.h covered')
    return bad


def check_policies(gen_c, consts):
    """ynl-gen-c's kernel code for the spec against kmod/netlink.c."""
    bad = []
    with open(NETLINK_C) as f:
        mod = strip_comments(f.read())
    mod = expand(mod, {k: v for k, v in object_macros(mod).items()
                       if k.startswith('SFT_POLICY')})
    mod_pol = policies(mod, consts)
    mod_ops = ops_table(mod)

    gen_pol_by_name = policies(strip_comments(gen_c), consts)
    gen_pol = {}
    for m in re.finditer(r'/\* (\w+) - (do|dump) \*/\s*(?:static\s+)?const\s+struct\s+'
                         r'nla_policy\s+(\w+)', gen_c):
        gen_pol[(m.group(1), m.group(2))] = gen_pol_by_name[m.group(3)]
    gen_ops = ops_table(strip_comments(gen_c))

    compared = 0
    for cmd in sorted(set(mod_ops) | set(gen_ops)):
        mo, go = mod_ops.get(cmd), gen_ops.get(cmd)
        if not mo:
            bad.append(f'{cmd}: in the spec, not registered by netlink.c')
            continue
        if not go:
            bad.append(f'{cmd}: registered by netlink.c, not a request of the spec')
            continue
        for k in ('doit', 'dumpit'):
            if (k in mo) != (k in go):
                bad.append(f'{cmd}: {k} {"in" if k in mo else "not in"} netlink.c, '
                           f'{"in" if k in go else "not in"} the spec')
        mf, gf = mo.get('flags', '0'), go.get('flags', '0')
        if set(mf.split(' | ')) != set(gf.split(' | ')):
            bad.append(f'{cmd}: flags {mf} in netlink.c, {gf} in the spec')
        mp = mod_pol.get(mo.get('policy'), {})
        for mode in ('do', 'dump'):
            if mode + 'it' not in mo:
                continue
            gp = gen_pol.get((cmd, mode), {})
            for attr in sorted(set(mp) | set(gp)):
                compared += 1
                if attr not in gp:
                    bad.append(f'{cmd} {mode}: netlink.c takes {attr} {mp[attr]}, the spec does not')
                elif attr not in mp:
                    bad.append(f'{cmd} {mode}: the spec takes {attr} {gp[attr]}, netlink.c does not')
                elif mp[attr] != gp[attr]:
                    bad.append(f'{cmd} {mode}: {attr} is {mp[attr]} in netlink.c, {gp[attr]} in the spec')
    print(f'# {len(mod_ops)} commands, {compared} policy entries of their do and dump compared')
    if not compared:
        bad.append('no policy entry compared')
    return bad


def main():
    print('TAP version 13')
    try:
        import yaml
        import jsonschema  # noqa: F401
    except ImportError as e:
        skip(f'python3 lacks {e.name} (apt-get install python3-yaml python3-jsonschema)')
    ynl_tools = os.path.join(YNL_DIR, 'tools', 'net', 'ynl')
    schema_dir = os.path.join(YNL_DIR, 'Documentation', 'netlink')
    if not os.path.exists(os.path.join(ynl_tools, 'ynl-gen-c.py')):
        skip(f'no YNL tree in {YNL_DIR} (make ynl; needs linux-source-6.12)')
    if not shutil.which(CC):
        skip(f'no C compiler ({CC})')

    with open(SPEC) as f:
        spec = yaml.safe_load(f)
    tmp = tempfile.mkdtemp(prefix='ynl_spec.')
    try:
        # ynl-gen-c finds the schema next to the spec's directory and the
        # tree's top by its MAINTAINERS file: a tree of its own
        tree_specs = os.path.join(tmp, 'Documentation', 'netlink', 'specs')
        os.makedirs(tree_specs)
        for s in os.listdir(schema_dir):
            if s.endswith('.yaml'):
                shutil.copy(os.path.join(schema_dir, s), os.path.dirname(tree_specs))
        open(os.path.join(tmp, 'MAINTAINERS'), 'w').close()
        tree_spec = os.path.join(tree_specs, 'shift_ft.yaml')
        shutil.copy(SPEC, tree_spec)

        print('1..3')
        tap = Tap()
        tap.result('the spec is valid against the kernel\'s ' +
                   spec.get('protocol', 'genetlink') + ' schema', check_schema(spec, schema_dir))

        consts, enums = header_constants(tmp)
        sys.path.insert(0, ynl_tools)
        mod_spec = importlib.util.spec_from_file_location('ynl_gen_c',
                                                          os.path.join(ynl_tools, 'ynl-gen-c.py'))
        gen = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(gen)
        try:
            fam = gen.Family(tree_spec, [])
            problems = check_uapi(fam, consts, enums)
        except Exception as e:
            problems = [f'ynl-gen-c cannot read the spec: {e!r}']
        tap.result('every name and value of the spec is shift_ft.h\'s, and none is missing',
                   problems)

        gen_c = os.path.join(tmp, 'shift_ft-nl.c')
        r = subprocess.run([sys.executable, os.path.join(ynl_tools, 'ynl-gen-c.py'),
                            '--mode', 'kernel', '--source', '--spec', tree_spec,
                            '-o', gen_c], capture_output=True, text=True)
        if r.returncode:
            problems = ['ynl-gen-c --mode kernel failed: ' + (r.stdout + r.stderr).strip()]
        else:
            with open(gen_c) as f:
                try:
                    problems = check_policies(f.read(), consts)
                except (ValueError, KeyError) as e:
                    problems = [f'cannot compare the policies: {e}']
        tap.result('each command\'s handlers, flags and request policy are netlink.c\'s',
                   problems)
    finally:
        shutil.rmtree(tmp)
    print(f'# {tap.n - tap.failed} passed, {tap.failed} failed')
    sys.exit(1 if tap.failed else 0)


if __name__ == '__main__':
    main()
