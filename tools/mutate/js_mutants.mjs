// Mutant generator for the JS runtime (issue 15 item 1), used by tools/mutate/js.py.
//   node js_mutants.mjs ACORN_PREFIX FILE...   ->  stdout: one JSON object per mutant
//   {"file", "line", "col", "start", "end", "repl", "op", "orig"}: replace source[start:end) (UTF-16 offsets) by repl.
// Parsed with acorn (pinned in eventlog/toolchain.py), walked generically. Operators, each applied alone:
//   binary     arithmetic/bitwise/equality/relational operator swapped (=== <-> !==, < -> <=, + -> -, & -> |, ...)
//   logical    && <-> ||, ?? -> &&
//   unary      !x -> x, -x -> x, ~x -> x
//   update     ++ <-> --
//   cond       the test of if/?:/while/for/do replaced by true and by false (loops: false only)
//   return     `return X` -> `return undefined`
//   literal    true <-> false; number n -> n + 1; non-empty string -> "" (not import sources, property keys,
//              directives, error messages)
//   block      a non-empty block (function body, branch, loop body, catch) emptied
//   call       an expression statement that is a call (or await of one) removed
// Not mutated: regular expression literals (the rules live in eventlog/dlp/rules.json), error message texts and
// diagnostic text (stderr/console arguments), the
// entries of data tables (array/object literals of 8 or more entries, e.g. IBAN lengths, placeholder words: one
// mutant per entry would only count how many entries the tests sample). A mutant that does not parse is dropped.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const [acornDir, ...files] = process.argv.slice(2);
const acorn = createRequire(join(acornDir, "package.json"))("acorn");

const SWAP = {
  "===": ["!=="], "!==": ["==="], "==": ["!="], "!=": ["=="],
  "<": ["<="], "<=": ["<"], ">": [">="], ">=": [">"],
  "+": ["-"], "-": ["+"], "*": ["/"], "/": ["*"], "%": ["*"],
  "&": ["|"], "|": ["&"], "^": ["&"], "<<": [">>"], ">>": ["<<"], ">>>": [">>"],
  "&&": ["||"], "||": ["&&"], "??": ["&&"],
};

function lineCol(src) {
  const starts = [0];
  for (let i = 0; i < src.length; i++) if (src[i] === "\n") starts.push(i + 1);
  return (pos) => {
    let lo = 0, hi = starts.length - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (starts[mid] <= pos) lo = mid; else hi = mid - 1; }
    return [lo + 1, pos - starts[lo] + 1];
  };
}

function isErrorCtor(n) {
  return n && n.type === "NewExpression" && n.callee.type === "Identifier" && /Error$|^BadEvent$|^DamagedLog$|^LockTimeout$/.test(n.callee.name);
}

for (const file of files) {
  const src = readFileSync(file, "utf8");
  const ast = acorn.parse(src, { ecmaVersion: "latest", sourceType: "module" });
  const at = lineCol(src);
  const out = [];
  // cs/ce: the span whose execution decides coverage (for an operator token, the whole expression: `a ?? b` runs
  // even when b never does, and `a && b` differs from it)
  const add = (start, end, repl, op, cs = start, ce = end) => {
    const [line, col] = at(start);
    out.push({ file, line, col, start, end, repl, op, orig: src.slice(start, end).slice(0, 80), cs, ce });
  };
  // operator token between two operands (only whitespace, parentheses and comments lie between them)
  const opAt = (left, right, op) => {
    const gap = src.slice(left.end, right.start);
    let i = -1;
    for (let k = gap.indexOf(op); k >= 0; k = gap.indexOf(op, k + 1)) {
      const before = gap.slice(0, k);
      if (before.includes("//") || before.includes("/*")) continue;
      const nxt = gap[k + op.length];
      if (op.length === 1 && (nxt === "=" || nxt === op)) continue;
      i = k; break;
    }
    return i < 0 ? -1 : left.end + i;
  };
  const skipStr = new Set();
  // diagnostic text: the arguments of stderr(...), console.*(...), process.stderr.write(...)
  const diagnostic = (c) => c.type === "CallExpression" && ((c.callee.type === "Identifier" && c.callee.name === "stderr")
    || (c.callee.type === "MemberExpression" && /^(console|process\.stderr)\./.test(src.slice(c.callee.start, c.callee.end))));
  const table = (p) => p && ((p.type === "ArrayExpression" && p.elements.length >= 8)
    || (p.type === "ObjectExpression" && p.properties.length >= 8));
  function walk(n, parent, key) {
    if (!n || typeof n.type !== "string") return;
    switch (n.type) {
      case "ImportDeclaration": case "ExportAllDeclaration": return;
      case "ExportNamedDeclaration": if (n.source) return; break;
      case "BinaryExpression": case "LogicalExpression": {
        const p = opAt(n.left, n.right, n.operator);
        if (p >= 0) for (const r of SWAP[n.operator] || []) add(p, p + n.operator.length, r, n.type === "LogicalExpression" ? "logical" : "binary", n.start, n.end);
        break;
      }
      case "UnaryExpression":
        if (["!", "-", "~"].includes(n.operator) && !(n.operator === "-" && n.argument.type === "Literal"))
          add(n.start, n.argument.start, "", "unary");
        break;
      case "UpdateExpression":
        if (n.prefix) add(n.start, n.start + 2, n.operator === "++" ? "--" : "++", "update");
        else add(n.end - 2, n.end, n.operator === "++" ? "--" : "++", "update");
        break;
      case "IfStatement": case "ConditionalExpression":
        add(n.test.start, n.test.end, "(true)", "cond");
        add(n.test.start, n.test.end, "(false)", "cond");
        break;
      case "WhileStatement": case "DoWhileStatement":
        add(n.test.start, n.test.end, "(false)", "cond");
        break;
      case "ForStatement":
        if (n.test) add(n.test.start, n.test.end, "(false)", "cond");
        break;
      case "ReturnStatement":
        if (n.argument && !(n.argument.type === "Identifier" && n.argument.name === "undefined"))
          add(n.argument.start, n.argument.end, "undefined", "return");
        break;
      case "ArrowFunctionExpression":
        if (n.expression) add(n.body.start, n.body.end, "(undefined)", "return");
        break;
      case "Literal":
        if (table(parent) || (parent && parent.type === "Property" && table(parent.__parent))) break;
        if (typeof n.value === "boolean") add(n.start, n.end, String(!n.value), "literal");
        else if (typeof n.value === "number") add(n.start, n.end, String(n.value + 1), "literal");
        else if (typeof n.value === "bigint") add(n.start, n.end, `${n.value + 1n}n`, "literal");
        else if (typeof n.value === "string" && !skipStr.has(n) && !(parent && parent.type === "Property" && key === "key")
                 && !(parent && parent.type === "ExpressionStatement" && parent.directive))
          add(n.start, n.end, n.value === "" ? '"mutant"' : '""', "literal");
        break;
      case "TemplateLiteral":
        if (!skipStr.has(n) && !(parent && parent.type === "TaggedTemplateExpression") && src.slice(n.start, n.end) !== "``") add(n.start, n.end, '""', "literal");
        break;
      case "BlockStatement":
        if (n.body.length) add(n.start, n.end, "{}", "block");
        break;
      case "ExpressionStatement": {
        let e = n.expression;
        if (e.type === "AwaitExpression") e = e.argument;
        if (e.type === "CallExpression" || (e.type === "ChainExpression" && e.expression.type === "CallExpression"))
          add(n.start, n.end, ";", "call");
        break;
      }
      case "CallExpression":
        if (diagnostic(n)) for (const a of n.arguments) if (a.type === "Literal" || a.type === "TemplateLiteral") skipStr.add(a);
        break;
      case "NewExpression": case "ThrowStatement":
        if (isErrorCtor(n) || (n.type === "ThrowStatement" && isErrorCtor(n.argument))) {
          const ne = n.type === "ThrowStatement" ? n.argument : n;
          for (const a of ne.arguments) if (a.type === "Literal" || a.type === "TemplateLiteral") skipStr.add(a);
        }
        break;
    }
    for (const k of Object.keys(n)) {
      if (k === "type" || k === "start" || k === "end") continue;
      const v = n[k];
      if (k === "__parent") continue;
      if (Array.isArray(v)) for (const c of v) { if (c) c.__parent = n; walk(c, n, k); }
      else if (v && typeof v.type === "string") { v.__parent = n; walk(v, n, k); }
    }
  }
  walk(ast, null, null);
  for (const m of out) {
    try {
      acorn.parse(src.slice(0, m.start) + m.repl + src.slice(m.end), { ecmaVersion: "latest", sourceType: "module" });
    } catch { continue; }
    process.stdout.write(JSON.stringify(m) + "\n");
  }
}
