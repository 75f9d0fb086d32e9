// One esbuild build: every js/src/*.ts and every js/src/views/<name>/index.ts is a widget entry, bundled (with
// js/src/shared/ and js/src/draw/) into ../attnwidgets/static/<name>.js as an ES module that anywidget loads. `node build.mjs --watch` rebuilds on change
// (pair it with ANYWIDGET_HMR=1 in the kernel for live reload; see DEVELOP.md).
// It also bundles the JupyterLab extension's entry, js/src/lab/index.ts (which imports the same views), to lib/lab.js
// with JupyterLab's own packages left as imports: `npm run build:lab` (@jupyterlab/builder) makes the federated
// extension in ../attnwidgets/labextension/ from it, sharing those packages with the JupyterLab that loads it.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import * as esbuild from "esbuild";

const entries = readdirSync("src")
  .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
  .map((f) => ({ in: join("src", f), out: f.slice(0, -3) }));
// A view in parts (js/src/views/<name>/: index.ts wires up state.ts, paint.ts, controls.ts) keeps its file name.
for (const name of existsSync("src/views") ? readdirSync("src/views") : []) {
  const index = join("src", "views", name, "index.ts");
  if (existsSync(index)) entries.push({ in: index, out: name });
}

const options = {
  entryPoints: entries,
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: true,
  sourcemap: false,
  outdir: "../attnwidgets/static",
  logLevel: "info",
};

const lab = {
  entryPoints: ["src/lab/index.ts"],
  bundle: true,
  format: "esm",
  target: "es2020",
  outfile: "lib/lab.js",
  external: ["@jupyterlab/*", "@lumino/*"],
  logLevel: "info",
};

if (process.argv.includes("--watch")) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await Promise.all([esbuild.build(options), esbuild.build(lab)]);
}
