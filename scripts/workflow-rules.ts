/**
 * The repository's own workflow rules (core/workflows/workflow-rules.ts) over every file
 * in .github/workflows; `npm run lint:workflows` runs it after actionlint.
 * Exit 0 clean, 1 findings (printed).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { formatFindings, lintWorkflows } from "../core/workflows/workflow-rules";

const dir = path.join(__dirname, "..", ".github", "workflows");
const files = new Map(
    fs
        .readdirSync(dir)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort()
        .map((f) => [f, fs.readFileSync(path.join(dir, f), "utf8")] as const),
);
const findings = lintWorkflows(files);
if (findings.length > 0) {
    console.error(formatFindings(findings));
    process.exit(1);
}
console.error(`workflow-rules: ${files.size} workflow(s) keep the repository's rules (core/workflows/workflow-rules.ts)`);
