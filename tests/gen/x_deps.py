#!/usr/bin/env python3
"""x_deps.py - the module graph of zgen's C sources, for tests/gen/t_deps.sh.

A module is one .c file. A.c -> B.c when A.c uses a function or object with external linkage that
B.c defines; a use through a header's macro or static inline function counts as a use of what that
body names. The graph is read from the sources rather than from objects, so code behind #ifdef
(the CUDA and NCCL files, compiled to nothing here) and the trainer templates are in it; --nm checks
that reading against `nm` of the objects that are built. Headers are checked on their own: one
header including another, directly, is an edge of the include graph.

  x_deps.py [--nm OBJ...] ROOT
prints one line per finding ("cycle: a.c -> b.c -> a.c", "include cycle: ...", "nm edge missed:
...") and "modules N edges N headers N" last; exits 1 when it found anything.
"""
import os
import re
import subprocess
import sys

# The sources of every program built from this tree. A symbol defined by several modules (the arch
# adapters, the GPU stand-in beside runtime/zr_gpu_cuda.c) gives an edge to each of them: an
# alternative must not close a cycle either.
SOURCE_DIRS = ["gen", "runtime", "runtime/solo"]
TEMPLATE_DIRS = ["templates/trainer", "templates/host", "templates/host/gpt2", "templates/host/llama",
                 "templates/cuda_trainer", "templates/cuda_trainer/gpt2", "templates/cuda_trainer/llama"]
C_EXT = (".c", ".cpp")
KEYWORDS = set("""auto break case char const continue default do double else enum extern float for
goto if inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Bool _Thread_local _Static_assert _Alignas _Alignof _Atomic
_Noreturn bool true false NULL""".split())

TOKEN = re.compile(r"[A-Za-z_]\w*|->|\S")


def strip(text):
    """Comments, string and character literals removed (kept as a space), lines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j) or " ")
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_pp(text):
    """(code without preprocessor lines, [(directive, rest)]), continuation lines joined."""
    code, pp = [], []
    lines = text.replace("\\\n", " ").split("\n")
    cxx = 0  # inside #ifdef __cplusplus (extern "C" { and its }): C++ only, and no scope
    for line in lines:
        s = line.lstrip()
        if s.startswith("#"):
            m = re.match(r"#\s*(\w+)\s*(.*)", s)
            if m:
                pp.append((m.group(1), m.group(2)))
                if cxx:
                    cxx += m.group(1).startswith("if")
                    cxx -= m.group(1) == "endif"
                elif m.group(1) == "ifdef" and m.group(2).strip() == "__cplusplus":
                    cxx = 1
            code.append("")
        else:
            code.append("" if cxx else line)
    return "\n".join(code), pp


def top_level(tokens):
    """File-scope statements: lists of tokens, each ending at ';' or at a function body's '}';
    a function body becomes the single token '{}' and its tokens are returned apart."""
    stmts, bodies, cur, i, n = [], [], [], 0, len(tokens)
    while i < n:
        t = tokens[i]
        if t == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                depth += tokens[j] == "{"
                depth -= tokens[j] == "}"
                j += 1
            inner = tokens[i + 1:j - 1]
            if cur and cur[-1] == ")" and "=" not in cur:  # a function definition
                stmts.append(cur + ["{}"])
                bodies.append(inner)
                cur = []
            else:  # an initializer or a struct/enum body: part of the statement
                cur.append("{")
                cur.extend(inner)
                cur.append("}")
            i = j
        elif t == ";":
            stmts.append(cur)
            cur = []
            i += 1
        else:
            cur.append(t)
            i += 1
    return stmts, bodies


def declared_name(stmt):
    """The name a file-scope statement defines, with whether it is a function; None for a type,
    a prototype, or a declaration that defines nothing."""
    if not stmt or stmt[0] in ("typedef", "extern") or "static" in stmt:
        return None
    if stmt[-1] == "{}":
        depth = 0
        for k in range(len(stmt) - 2, -1, -1):  # the '(' matching the last ')'
            depth += stmt[k] == ")"
            depth -= stmt[k] == "("
            if depth == 0:
                name = stmt[k - 1] if k else None
                return (name, True) if name and name not in KEYWORDS else None
        return None
    # an object: the declarator before '=' or '[' (or ';'), outside braces and parentheses
    outside, depth = [], 0
    for k, t in enumerate(stmt):
        if t in "{(":
            if t == "(" and depth == 0 and k + 1 < len(stmt) and stmt[k + 1] == "*":
                return (stmt[k + 2], False) if k + 2 < len(stmt) else None  # a function pointer
            if t == "(" and depth == 0:
                return None  # a prototype
            depth += 1
        elif t in "})":
            depth -= 1
        elif depth == 0:
            if t in ("=", "["):
                break
            outside.append(t)
    if stmt[-1] == "}" or not outside:
        return None  # struct S { ... } alone
    name = outside[-1]
    if not re.match(r"[A-Za-z_]\w*$", name) or name in KEYWORDS or len(outside) < 2:
        return None
    return name, False


def uses(tokens):
    """Identifiers, less member names (after '.' or '->') and struct/union tags (`struct X *` needs
    no definition of X: an incomplete type is no dependency)."""
    return {t for k, t in enumerate(tokens) if re.match(r"[A-Za-z_]", t)
            and t not in KEYWORDS and not (k and tokens[k - 1] in (".", "->", "struct", "union"))}


TYPE_WORDS = set("char const double float int long short signed unsigned void bool volatile "
                 "restrict struct union enum".split())


def local_names(tokens):
    """Names a parameter list or a block declares: an identifier after a type (a name, a type
    keyword, or '*' after one of those) and before '=', ';', ',', '[' or ')'."""
    out = set()
    for k in range(1, len(tokens) - 1):
        t, nxt = tokens[k], tokens[k + 1]
        if not re.match(r"[A-Za-z_]\w*$", t) or t in KEYWORDS or nxt not in ("=", ";", ",", "[", ")"):
            continue
        j = k - 1
        while j >= 0 and tokens[j] == "*":
            j -= 1
        if j < 0:
            continue
        p = tokens[j]
        if p in TYPE_WORDS or (re.match(r"[A-Za-z_]\w*$", p) and p not in KEYWORDS):
            out.add(t)
    return out


class Source:
    def __init__(self, root, rel):
        self.rel = rel
        text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
        code, self.pp = split_pp(strip(text))
        self.tokens = TOKEN.findall(code)
        self.includes = re.findall(r'^\s*#\s*include\s*"([^"]+)"', text, re.M)
        stmts, bodies = top_level(self.tokens)
        self.defs, self.statics = set(), set()
        for s in stmts:
            d = declared_name(s)
            if d:
                self.defs.add(d[0])
            elif s and "static" in s:
                d = declared_name([t for t in s if t != "static"])
                if d:
                    self.statics.add(d[0])
        # what a function names, less its parameters and locals (a parameter `T` is not the
        # trainer's global T), and what the file scope names
        self.names = set()
        fns = [st for st in stmts if st and st[-1] == "{}"]
        for st, body in zip(fns, bodies):
            self.names |= uses(st + body) - local_names(st) - local_names(body)
        self.names |= uses([t for st in stmts if st[-1:] != ["{}"] for t in st])
        for d, rest in self.pp:  # a macro body of this file names what it uses
            if d == "define":
                self.names.update(TOKEN.findall(rest))


def header_defs(h):
    """The names a header defines: macros, typedef names, struct/union/enum tags, enumerators,
    functions and objects it declares."""
    out = {re.match(r"(\w+)", rest).group(1) for d, rest in h.pp
           if d == "define" and re.match(r"(\w+)", rest)}
    out.discard(guard(h))
    toks = h.tokens
    for k, t in enumerate(toks):
        # a bare tag (struct X { ... }) completes an opaque type another header names: not a
        # definition of the name X, which is the typedef's (members are not uses, see uses())
        if t == "enum" and k + 2 < len(toks) and toks[k + 2] == "{":
            out.add(toks[k + 1])
        if t == "enum":
            j = k + 1
            while j < len(toks) and toks[j] != "{" and toks[j] != ";":
                j += 1
            if j < len(toks) and toks[j] == "{":
                depth, j = 1, j + 1
                while j < len(toks) and depth:
                    if toks[j] in "({":
                        depth += 1
                    elif toks[j] in ")}":
                        depth -= 1
                    elif depth == 1 and re.match(r"[A-Za-z_]", toks[j]) and toks[j + 1] in (",", "=", "}"):
                        out.add(toks[j])
                    j += 1
    stmts, _ = top_level(toks)
    for st in stmts:
        if st[:1] == ["typedef"]:
            flat, depth = [], 0
            for k, t in enumerate(st):
                depth += t == "{"
                depth -= t == "}"
                if depth == 0 and t != "}":
                    flat.append((k, t))
            names = [t for k, t in flat if re.match(r"[A-Za-z_]\w*$", t)]
            paren = [k for k, t in flat if t == "("]
            if paren and st[paren[0] + 1] == "*":       # typedef R (*Name)(...)
                out.add(st[paren[0] + 2])
            elif paren:                                 # typedef R Name(...)
                out.add(st[paren[0] - 1])
            elif names:
                out.add(names[-1])
            continue
        body = [t for t in st if t not in ("extern", "static", "inline")]
        if body and body[-1] == "{}":
            d = declared_name(body)
            if d:
                out.add(d[0])
            continue
        depth = 0
        for k, t in enumerate(body):  # a prototype: the name before the first '(' at depth 0
            if t == "(" and depth == 0:
                if k and re.match(r"[A-Za-z_]\w*$", body[k - 1]) and body[k - 1] not in KEYWORDS:
                    if not (k + 1 < len(body) and body[k + 1] == "*"):
                        out.add(body[k - 1])
                break
            depth += t in "{["
            depth -= t in "}]"
        d = declared_name(body)
        if d:
            out.add(d[0])
    return out - KEYWORDS


def guard(h):
    for d, rest in h.pp:
        if d == "ifndef":
            return rest.strip()
    return None


def header_bodies(headers):
    """name -> identifiers its macro or static inline body uses, over all headers."""
    out = {}
    for h in headers:
        for d, rest in h.pp:
            if d == "define":
                m = re.match(r"(\w+)(\([^)]*\))?(.*)", rest)
                if m:
                    out.setdefault(m.group(1), set()).update(TOKEN.findall(m.group(3)))
        stmts, bodies = top_level(h.tokens)
        fns = [s for s in stmts if s and s[-1] == "{}"]
        for s, body in zip(fns, bodies):
            d = declared_name([t for t in s if t not in ("static", "inline")])
            if d:
                out.setdefault(d[0], set()).update(t for t in body if re.match(r"[A-Za-z_]", t))
    return out


def expand(names, bodies):
    seen, todo = set(names), list(names)
    while todo:
        for u in bodies.get(todo.pop(), ()):
            if u not in seen:
                seen.add(u)
                todo.append(u)
    return seen


def cycles(graph):
    """The strongly connected components with more than one node (Tarjan), and one cycle through
    each, as a list of nodes starting and ending at the same one."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))
            elif nxt not in index:
                index[nxt] = low[nxt] = counter[0]
                counter[0] += 1
                stack.append(nxt)
                on.add(nxt)
                work.append((nxt, iter(sorted(graph.get(nxt, ())))))
            elif nxt in on:
                low[node] = min(low[node], index[nxt])

    for v in sorted(graph):
        if v not in index:
            visit(v)
    out = []
    for comp in sorted(comps):
        members, start = set(comp), comp[0]
        # the shortest path from start back to itself inside the component (breadth first)
        prev, frontier, found = {start: None}, [start], None
        while frontier and not found:
            nxt_frontier = []
            for u in frontier:
                for w in sorted(graph.get(u, ())):
                    if w not in members:
                        continue
                    if w == start:
                        found = u
                        break
                    if w not in prev:
                        prev[w] = u
                        nxt_frontier.append(w)
                if found:
                    break
            frontier = nxt_frontier
        path, u = [start], found
        while u is not None and u != start:
            path.append(u)
            u = prev[u]
        path.append(start)
        path.reverse()
        out.append((comp, path))
    return out


def nm_edges(objs, root):
    """(A.c, B.c) from nm: A's object leaves undefined a symbol B's object defines."""
    defined, undefined = {}, {}
    for o in objs:
        src = re.sub(r"^build/(solo/)?", "", os.path.relpath(o, root))[:-2] + ".c"
        res = subprocess.run(["nm", o], capture_output=True, text=True, check=True)
        for line in res.stdout.splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == "U":
                undefined.setdefault(src, set()).add(f[1])
            elif len(f) == 3 and f[1] in "TDBRCGV":
                defined[f[2]] = src
    edges = {(a, defined[s]) for a, us in undefined.items() for s in us
             if s in defined and defined[s] != a}
    return defined, edges


def main(argv):
    objs, dirs = [], list(SOURCE_DIRS)
    while argv and argv[0].startswith("--"):
        if argv[0] == "--templates":
            dirs += TEMPLATE_DIRS
            argv = argv[1:]
        elif argv[0] == "--nm":
            argv = argv[1:]
            while len(argv) > 1 and argv[0].endswith(".o"):
                objs.append(argv.pop(0))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    root = argv[0]
    sources, headers = [], []
    for d in dirs:
        full = os.path.join(root, d)
        if not os.path.isdir(full):
            continue
        for f in sorted(os.listdir(full)):
            rel = os.path.join(d, f)
            if f.endswith(C_EXT):
                sources.append(Source(root, rel))
            elif f.endswith(".h"):
                headers.append(Source(root, rel))
    bodies = header_bodies(headers)
    nm_defined, nm_found = nm_edges(objs, root) if objs else ({}, set())
    by_rel = {s.rel: s for s in sources}
    for name, rel in nm_defined.items():  # what a macro expands to a definition (gen/names.c)
        if rel in by_rel:
            by_rel[rel].defs.add(name)
    definers = {}
    for s in sources:
        for name in s.defs:
            definers.setdefault(name, set()).add(s.rel)
    graph, why = {}, {}
    for s in sources:
        graph.setdefault(s.rel, set())
        used = expand(s.names - s.defs - s.statics, bodies) - s.defs - s.statics
        for name in used:
            for b in definers.get(name, ()):
                if b != s.rel:
                    graph[s.rel].add(b)
                    why.setdefault((s.rel, b), set()).add(name)
    problems = 0
    for comp, path in cycles(graph):
        steps = ["%s -> %s (%s)" % (a, b, ", ".join(sorted(why[(a, b)])[:3]))
                 for a, b in zip(path, path[1:])]
        print("cycle: %s\n  modules: %s\n  %s" % (" -> ".join(path), " ".join(comp),
                                                  "\n  ".join(steps)))
        problems += 1
    # headers: "x.h" resolves beside the including header, else in any source folder
    by_name = {}
    for h in headers:
        by_name.setdefault(os.path.basename(h.rel), h.rel)
    hdefs = {h.rel: header_defs(h) for h in headers}
    hdefiners = {}
    for rel, names in hdefs.items():
        for name in names:
            hdefiners.setdefault(name, set()).add(rel)
    hgraph, hwhy = {}, {}
    for h in headers:
        hgraph[h.rel] = set()
        for name in (uses(h.tokens) - local_names(h.tokens)) | {t for d, rest in h.pp if d == "define"
                                      for t in TOKEN.findall(rest)[1:]}:
            if name in hdefs[h.rel]:
                continue
            for b in hdefiners.get(name, ()):
                hgraph[h.rel].add(b)
                hwhy.setdefault((h.rel, b), set()).add(name)
        for inc in h.includes:
            beside = os.path.normpath(os.path.join(os.path.dirname(h.rel), inc))
            target = beside if any(x.rel == beside for x in headers) else by_name.get(os.path.basename(inc))
            if target and target != h.rel:
                hgraph[h.rel].add(target)
                hwhy.setdefault((h.rel, target), set()).add("#include")
    for comp, path in cycles(hgraph):
        steps = ["%s -> %s (%s)" % (a, b, ", ".join(sorted(hwhy[(a, b)])[:3]))
                 for a, b in zip(path, path[1:])]
        print("include cycle: %s\n  headers: %s\n  %s" % (" -> ".join(path), " ".join(comp),
                                                         "\n  ".join(steps)))
        problems += 1
    if objs:
        for a, b in sorted(nm_found):
            if b not in graph.get(a, ()):
                print("nm edge missed: %s -> %s" % (a, b))
                problems += 1
    print("modules %d edges %d headers %d" % (len(graph), sum(len(v) for v in graph.values()),
                                             len(headers)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
