# Python perturbation rules over CPython's own syntax tree. gavel runs this
# with python3 -I, sends {"rule", "code", "seed"} on stdin, and reads
# {"code"} or {"error"} on stdout. It parses the program; it never runs it.
import ast
import json
import random
import sys

NOT_APPLICABLE = "not_applicable"


class NotApplicable(Exception):
    pass


def target(tree):
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not funcs:
        raise NotApplicable()
    return funcs[-1]


def body_start(fn):
    # Statements after the docstring.
    if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(getattr(fn.body[0], "value", None), ast.Constant) and isinstance(fn.body[0].value.value, str):
        return 1
    return 0


def stmts(src):
    return ast.parse(src).body


def first_arg(fn):
    if not fn.args.args:
        raise NotApplicable()
    return fn.args.args[0].arg


def pick(rng, xs):
    if not xs:
        raise NotApplicable()
    return xs[rng.randrange(len(xs))]


MISLEADING = ["total", "flag", "temp", "data", "result", "value", "count", "item", "buffer", "node", "output", "status"]


def misleading_names(tree, fn, rng):
    names = [a.arg for a in fn.args.args]
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in names:
            names.append(n.id)
    if not names:
        raise NotApplicable()
    taken = set(names) | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    mapping = {}
    for i, name in enumerate(names):
        new = MISLEADING[(rng.randrange(len(MISLEADING)) + i) % len(MISLEADING)] + str(i + 1)
        if new not in taken:
            mapping[name] = new
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
        elif isinstance(n, ast.arg) and n.arg in mapping:
            n.arg = mapping[n.arg]


def dead_code(tree, fn, rng):
    i = body_start(fn)
    fn.body[i:i] = stmts("_unused_limit = %d\nif _unused_limit < 0:\n    _unused_limit = -_unused_limit" % rng.randrange(100, 1000))


def redundant_copy(tree, fn, rng):
    a = first_arg(fn)
    i = body_start(fn)
    fn.body[i:i] = stmts("%s = list(%s) if isinstance(%s, list) else %s" % (a, a, a, a))


def duplicated_function(tree, fn, rng):
    dup = ast.parse(ast.unparse(fn)).body[0]
    dup.name = fn.name + "_impl"
    args = ", ".join(a.arg for a in fn.args.args)
    i = body_start(fn)
    fn.body[i:] = stmts("return %s(%s)" % (dup.name, args))
    tree.body.insert(tree.body.index(fn), dup)


def quadratic_scan(tree, fn, rng):
    a = first_arg(fn)
    i = body_start(fn)
    fn.body[i:i] = stmts("_checks = 0\nfor _outer in range(len(%s)):\n    for _inner in range(len(%s)):\n        if _outer == _inner:\n            _checks += 1" % (a, a))


def off_by_one(tree, fn, rng):
    cands = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range" and len(n.args) in (1, 2):
            cands.append(("range", n))
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            cands.append(("cmp", n))
    kind, n = pick(rng, cands)
    if kind == "range":
        n.args[-1] = ast.BinOp(left=n.args[-1], op=ast.Sub(), right=ast.Constant(1))
    else:
        swap = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
        n.ops[0] = swap[type(n.ops[0])]()


def inverted_condition(tree, fn, rng):
    n = pick(rng, [n for n in ast.walk(fn) if isinstance(n, (ast.If, ast.While, ast.IfExp))])
    n.test = ast.UnaryOp(op=ast.Not(), operand=n.test)


def missing_guard(tree, fn, rng):
    idx = [i for i, s in enumerate(fn.body[:-1]) if isinstance(s, ast.If) and not s.orelse and len(s.body) == 1 and isinstance(s.body[0], ast.Return)]
    i = pick(rng, idx)
    del fn.body[i]


def wrong_operator(tree, fn, rng):
    swaps = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add}
    cmps = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.Gt, ast.Gt: ast.Lt}
    cands = [n for n in ast.walk(fn) if (isinstance(n, ast.BinOp) and type(n.op) in swaps and not (isinstance(n.left, ast.Constant) and isinstance(n.left.value, str)))
             or (isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in cmps)]
    n = pick(rng, cands)
    if isinstance(n, ast.BinOp):
        n.op = swaps[type(n.op)]()
    else:
        n.ops[0] = cmps[type(n.ops[0])]()


def drop_loop(tree, fn, rng):
    idx = [i for i, s in enumerate(fn.body) if isinstance(s, (ast.For, ast.While))]
    i = pick(rng, idx)
    del fn.body[i]
    if not fn.body:
        fn.body = stmts("return None")


def multi_element_bail(tree, fn, rng):
    a = first_arg(fn)
    i = body_start(fn)
    fn.body[i:i] = stmts("if hasattr(%s, '__len__') and len(%s) > 1:\n    return None" % (a, a))


def empty_body(tree, fn, rng):
    fn.body[body_start(fn):] = stmts("return None")


def unrelated_body(tree, fn, rng):
    fn.body[body_start(fn):] = stmts("checksum = 0\nfor ch in 'unrelated':\n    checksum = checksum * 31 + ord(ch)\nreturn checksum")


SYNONYMS = {
    "i": "idx", "idx": "i", "j": "k", "k": "j", "n": "size", "size": "n", "result": "res", "res": "result",
    "ans": "answer", "answer": "ans", "count": "cnt", "cnt": "count", "total": "acc", "acc": "total",
    "s": "text", "text": "s", "x": "val", "val": "x", "v": "elem", "elem": "v", "num": "number", "number": "num",
    "numbers": "nums", "nums": "numbers", "arr": "items", "items": "arr", "out": "output", "output": "out",
    "tmp": "temp", "temp": "tmp", "c": "ch", "ch": "c", "word": "w", "w": "word", "lst": "seq", "seq": "lst",
    "a": "first", "b": "second", "m": "mid", "mid": "m", "start": "begin", "begin": "start", "end": "stop",
    "flag": "found", "found": "flag", "ret": "result", "l": "lst", "string": "text", "strings": "texts",
}


def local_names(fn):
    # Not the parameters: a caller may pass them by name.
    names = []
    params = {a.arg for a in fn.args.args}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in names and n.id not in params:
            names.append(n.id)
    return names


def rename_locals(tree, fn, rng):
    # Names as clear as the ones they replace: quality is unchanged.
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    taken |= {f.name for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.ClassDef))}
    can = [name for name in local_names(fn) if SYNONYMS.get(name) and SYNONYMS[name] not in taken]
    if not can:
        raise NotApplicable()
    mapping = {}
    for name in rng.sample(can, 1 + rng.randrange(len(can))):
        if SYNONYMS[name] not in taken:
            mapping[name] = SYNONYMS[name]
            taken.add(SYNONYMS[name])
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
        elif isinstance(n, ast.arg) and n.arg in mapping:
            n.arg = mapping[n.arg]


MIRROR = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


def simple(e):
    if isinstance(e, (ast.Name, ast.Constant)):
        return True
    if isinstance(e, ast.Subscript):
        return simple(e.value) and simple(e.slice)
    if isinstance(e, ast.Attribute):
        return simple(e.value)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
        return simple(e.left) and simple(e.right)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len" and len(e.args) == 1 and not e.keywords:
        return simple(e.args[0])
    return False


def mirror_comparison(tree, fn, rng):
    cmps = [n for n in ast.walk(fn) if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in MIRROR
            and simple(n.left) and simple(n.comparators[0])]
    n = pick(rng, cmps)
    n.left, n.comparators[0] = n.comparators[0], n.left
    n.ops[0] = MIRROR[type(n.ops[0])]()


def normalize(tree, fn, rng):
    # The printer alone: references go through it as candidates do.
    pass


RULES = {
    "py_rename_locals": rename_locals,
    "py_mirror_comparison": mirror_comparison,
    "normalize": normalize,
    "py_misleading_names": misleading_names,
    "py_dead_code": dead_code,
    "py_redundant_copy": redundant_copy,
    "py_duplicated_function": duplicated_function,
    "py_quadratic_scan": quadratic_scan,
    "py_off_by_one": off_by_one,
    "py_inverted_condition": inverted_condition,
    "py_missing_guard": missing_guard,
    "py_wrong_operator": wrong_operator,
    "py_drop_loop": drop_loop,
    "py_multi_element_bail": multi_element_bail,
    "py_empty_body": empty_body,
    "py_unrelated_body": unrelated_body,
}


def main():
    req = json.load(sys.stdin)
    rng = random.Random(req.get("seed", 0))
    try:
        tree = ast.parse(req["code"])
        fn = target(tree) if req["rule"] != "normalize" else None
        RULES[req["rule"]](tree, fn, rng)
        ast.fix_missing_locations(tree)
        json.dump({"code": ast.unparse(tree) + "\n"}, sys.stdout)
    except NotApplicable:
        json.dump({"error": NOT_APPLICABLE}, sys.stdout)
    except SyntaxError as e:
        json.dump({"error": "syntax: %s" % e}, sys.stdout)


main()
