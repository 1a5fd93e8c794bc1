import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ENVIRONMENT_SECRETS, evaluateExpression, lintWorkflows, READ_BACKEND_CHECK_STEP, WorkflowFinding } from "../../core/workflows/workflow-rules";

const dir = path.join(__dirname, "..", "..", ".github", "workflows");
const committed = (): Map<string, string> =>
    new Map(
        fs
            .readdirSync(dir)
            .filter((f) => /\.ya?ml$/.test(f))
            .map((f) => [f, fs.readFileSync(path.join(dir, f), "utf8")] as const),
    );

/** The committed workflows with one file replaced (or added). */
function withFile(file: string, text: string): Map<string, string> {
    const files = committed();
    files.set(file, text);
    return files;
}

/** The committed workflows with one file's text changed; the change must apply. */
function edited(file: string, from: string, to: string): Map<string, string> {
    const files = committed();
    const text = files.get(file) ?? "";
    assert.ok(text.includes(from), `${file} does not hold ${JSON.stringify(from)}`);
    files.set(file, text.replace(from, to));
    return files;
}

const rules = (findings: WorkflowFinding[]) => findings.map((f) => `${f.file}:${f.job ?? ""}:${f.rule}`);

/** preview.yml as it was before issue 34: the stack job called with `secrets: inherit` from a pull_request trigger. */
const PREVIEW_BEFORE_ISSUE_34 = `name: preview

on:
  pull_request:
    branches: [main]

permissions:
  contents: read

jobs:
  preview:
    if: github.event.pull_request.head.repo.full_name == github.repository
    permissions:
      contents: read
      pull-requests: write
    strategy:
      fail-fast: false
      matrix:
        stack: [ct129, kpro5]
    uses: ./.github/workflows/stack-job.yml
    with:
      stack: \${{ matrix.stack }}
      operation: preview
    secrets: inherit
`;

/** A pull request's preview, its secrets given as `secrets:` says. */
const previewWith = (secrets: string, on = "pull_request:\n    branches: [main]", operation = "preview") => `name: preview
on:
  ${on}
jobs:
  preview:
    if: github.event.pull_request.head.repo.full_name == github.repository
    strategy:
      matrix:
        stack: [ct129, kpro5]
    uses: ./.github/workflows/stack-job.yml
    with:
      stack: \${{ matrix.stack }}
      operation: ${operation}
${secrets}
`;

const namedSecrets = (names: readonly string[]) => ["    secrets:", ...names.map((n) => `      ${n}: \${{ secrets.${n} }}`)].join("\n");

describe("workflow rules (issue 34: the workflows hold under a hostile pull request's ordinary path)", () => {
    it("the committed workflows keep every rule", () => {
        assert.deepEqual(lintWorkflows(committed()), []);
    });

    it("preview.yml as it was before issue 34 is refused: secrets: inherit on a pull_request job", () => {
        const findings = lintWorkflows(withFile("preview.yml", PREVIEW_BEFORE_ISSUE_34));
        assert.deepEqual(rules(findings), ["preview.yml:preview:no-secrets-inherit"]);
        assert.match(findings[0].message, /Pass the named secrets of its environment instead/);
    });

    it("a pull_request job with secrets: inherit is refused, whatever else it passes", () => {
        const findings = lintWorkflows(withFile("pr-extra.yml", previewWith("    secrets: inherit")));
        assert.deepEqual(rules(findings), ["pr-extra.yml:preview:no-secrets-inherit"]);
    });

    it("the read environment's names, passed by name, are accepted from a pull_request job", () => {
        assert.deepEqual(lintWorkflows(withFile("preview.yml", previewWith(namedSecrets(ENVIRONMENT_SECRETS.read)))), []);
    });

    it("a preview that passes a deploy secret (SGLANG_SERVE_SSH_KEY) is refused, naming it", () => {
        const findings = lintWorkflows(withFile("preview.yml", previewWith(namedSecrets([...ENVIRONMENT_SECRETS.read, "SGLANG_SERVE_SSH_KEY"]))));
        assert.deepEqual(rules(findings), ["preview.yml:preview:named-secrets"]);
        assert.match(findings[0].message, /passes SGLANG_SERVE_SSH_KEY, which is not a secret of the <stack>-read environment/);
    });

    it("a drift check that passes the API key is refused", () => {
        const findings = lintWorkflows(
            edited(
                "drift.yml",
                "      SGLANG_SERVE_READ_SSH_KEY: ${{ secrets.SGLANG_SERVE_READ_SSH_KEY }}\n",
                "      SGLANG_SERVE_API_KEY: ${{ secrets.SGLANG_SERVE_API_KEY }}\n",
            ),
        );
        assert.deepEqual(rules(findings), ["drift.yml:check:named-secrets"]);
    });

    it("a secret passed under another name than its own is refused (the deploy key as the read key)", () => {
        const findings = lintWorkflows(
            edited(
                "preview.yml",
                "SGLANG_SERVE_READ_SSH_KEY: ${{ secrets.SGLANG_SERVE_READ_SSH_KEY }}",
                "SGLANG_SERVE_READ_SSH_KEY: ${{ secrets.SGLANG_SERVE_SSH_KEY }}",
            ),
        );
        assert.deepEqual(rules(findings), ["preview.yml:preview:named-secrets"]);
        assert.match(findings[0].message, /pass it under its own name/);
    });

    it("a pull_request workflow that deploys is refused", () => {
        const findings = lintWorkflows(withFile("pr-deploy.yml", previewWith(namedSecrets(ENVIRONMENT_SECRETS.deploy), "pull_request:", "deploy")));
        assert.ok(rules(findings).includes("pr-deploy.yml:preview:pull-request-operation"), rules(findings).join("\n"));
        assert.ok(rules(findings).includes("pr-deploy.yml:preview:deploy-trigger"), rules(findings).join("\n"));
    });

    it("a pull_request job without the fork filter is refused", () => {
        const findings = lintWorkflows(edited("preview.yml", "    if: github.event.pull_request.head.repo.full_name == github.repository\n", ""));
        assert.deepEqual(rules(findings), ["preview.yml:preview:fork-filter"]);
    });

    it("pull_request_target is refused (the base branch's cache scope and a token that can write)", () => {
        const findings = lintWorkflows(edited("preview.yml", "  pull_request:\n", "  pull_request_target:\n"));
        assert.ok(rules(findings).includes("preview.yml::no-pull-request-target"), rules(findings).join("\n"));
    });

    it("a deploy on a schedule is refused", () => {
        const findings = lintWorkflows(edited("deploy.yml", "  workflow_dispatch:\n", '  workflow_dispatch:\n  schedule:\n    - cron: "0 3 * * *"\n'));
        assert.deepEqual(rules(findings), ["deploy.yml:deploy:deploy-trigger"]);
    });

    it("stack-job.yml as it was before issue 34 is refused: deploys ran on the previews' runner label", () => {
        const findings = lintWorkflows(
            edited(
                "stack-job.yml",
                /runs-on: \[.*\]/.exec(committed().get("stack-job.yml") ?? "")?.[0] ?? "runs-on:",
                `runs-on: [self-hosted, "\${{ vars.BOX_RUNNER_LABEL || 'sglang-box' }}"]`,
            ),
        );
        const labels = findings.filter((f) => f.rule === "runner-labels");
        // preview and drift, with the variables unset and set.
        assert.equal(labels.length, 4, rules(findings).join("\n"));
        assert.match(labels[0].message, /a deploy needs a runner label of its own/);
    });

    it("deploys and previews reading one variable for their label are refused (the operator's value would be shared)", () => {
        const findings = lintWorkflows(edited("stack-job.yml", "vars.DEPLOY_RUNNER_LABEL ||", "vars.BOX_RUNNER_LABEL ||"));
        const labels = findings.filter((f) => f.rule === "runner-labels");
        assert.ok(labels.length > 0 && labels.every((f) => /with each repository variable set/.test(f.message)), rules(findings).join("\n"));
    });

    it("stack-job.yml without the read-backend check is refused", () => {
        const findings = lintWorkflows(edited("stack-job.yml", `- name: ${READ_BACKEND_CHECK_STEP}\n`, `- name: Something else\n`));
        assert.deepEqual(rules(findings), ["stack-job.yml:run:read-backend-check"]);
    });

    it("without a scheduled drift check the read-backend check is refused (only pull requests' copies would run it)", () => {
        const findings = lintWorkflows(edited("drift.yml", '  schedule:\n    # Every 6 hours, off the hour.\n    - cron: "23 */6 * * *"\n', ""));
        assert.deepEqual(rules(findings), ["stack-job.yml::read-backend-check"]);
    });
});

describe("workflow expressions (the subset runs-on uses)", () => {
    const ctx = (operation: string, vars: Record<string, string> = {}) => ({ inputs: { operation }, vars: (n: string) => vars[n] ?? null });

    it("&& and || return an operand, as GitHub's do", () => {
        const expr = "inputs.operation == 'deploy' && (vars.D || 'sglang-deploy') || (vars.B || 'sglang-box')";
        assert.equal(evaluateExpression(expr, ctx("deploy")), "sglang-deploy");
        assert.equal(evaluateExpression(expr, ctx("preview")), "sglang-box");
        assert.equal(evaluateExpression(expr, ctx("deploy", { D: "gpu-deploy" })), "gpu-deploy");
    });

    it("== compares strings ignoring case, as GitHub's does", () => {
        assert.equal(evaluateExpression("inputs.operation == 'DEPLOY'", ctx("deploy")), true);
        assert.equal(evaluateExpression("!(inputs.operation != 'deploy')", ctx("deploy")), true);
    });

    it("a context it cannot read is an error, never a guess", () => {
        assert.throws(() => evaluateExpression("github.ref == 'x'", ctx("deploy")), /only inputs and vars can be read here/);
        assert.throws(() => evaluateExpression("format('{0}', inputs.operation)", ctx("deploy")), /expression/);
    });
});
