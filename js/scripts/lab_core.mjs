// Writes lab-core/package.json, the JupyterLab core the labextension is built against (@jupyterlab/builder's
// --core-path): the shared package versions and singletons of a JupyterLab release, taken from its
// jupyterlab/staging/package.json. Kept in the repository so that the JS build (CI's js tier, before any Python is
// installed) needs no JupyterLab. Run it when moving to a new JupyterLab:
//   node scripts/lab_core.mjs "$(python -c 'import jupyterlab, os; print(os.path.dirname(jupyterlab.__file__))')/staging/package.json"
import { readFileSync, writeFileSync } from "node:fs";

const staging = JSON.parse(readFileSync(process.argv[2], "utf8"));
const core = {
  name: "@jupyterlab/application-top",
  private: true,
  description: `The JupyterLab core the labextension is built against (@jupyterlab/builder's --core-path): its shared package versions and singletons, from JupyterLab ${staging.version}'s jupyterlab/staging/package.json (regenerate: node scripts/lab_core.mjs <that file>).`,
  version: staging.version,
  dependencies: staging.dependencies,
  resolutions: staging.resolutions,
  jupyterlab: { singletonPackages: staging.jupyterlab.singletonPackages },
};
writeFileSync("lab-core/package.json", `${JSON.stringify(core, null, 2)}\n`);
