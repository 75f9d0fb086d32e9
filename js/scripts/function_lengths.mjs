// Lists every function in js/src longer than a limit (default 150 lines), longest first.
// Usage: node scripts/function_lengths.mjs [limit]   (exit 1 when any function is over the limit)
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const limit = Number(process.argv[2] ?? 150);
const root = new URL("../src/", import.meta.url).pathname;

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

function nameOf(node) {
  if (node.name?.getText) return node.name.getText();
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText();
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText();
  return "<anonymous>";
}

const rows = [];
for (const path of files(root)) {
  const text = readFileSync(path, "utf8");
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      rows.push({ file: relative(root, path), name: nameOf(node), lines: end - start + 1, line: start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
rows.sort((a, b) => b.lines - a.lines);
const over = rows.filter((r) => r.lines > limit);
for (const r of over) console.log(`${String(r.lines).padStart(4)}  ${r.file}:${r.line}  ${r.name}`);
console.log(`${over.length} of ${rows.length} functions over ${limit} lines; longest ${rows[0]?.lines ?? 0}`);
process.exit(over.length ? 1 : 0);
