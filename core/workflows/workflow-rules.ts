// The repository's own rules for its GitHub workflows (issue 34, finding 3),
// beside actionlint's generic checks: what a pull request's job may be given,
// and where a deploy may run. Pure: the workflow files' texts in, findings out
// (`npm run lint:workflows` and tests/core/workflow-rules.test.ts call it).
//
// What these rules can and cannot do: on `pull_request` GitHub runs the
// workflow files of the pull request's own merge commit, so a hostile pull
// request can edit any rule checked here away. The rules keep the committed
// workflows honest (the path every ordinary pull request and every deploy
// takes); what holds against a hostile one is set in GitHub, not in these
// files (docs/operator-guide.md, "CI: what protects what").
import * as yaml from "js-yaml";
import { isRecord } from "../is-record";

/** The reusable workflow that runs one stack's engine on a box runner. */
export const STACK_JOB = "./.github/workflows/stack-job.yml";

/** The operations stack-job.yml runs, and the environment each one uses. */
export type StackOperation = "preview" | "drift" | "deploy";

/**
 * What each GitHub environment of a stack holds, by name: a caller passes
 * exactly these names (`NAME: ${{ secrets.NAME }}`), never `secrets: inherit`.
 * A called workflow sees an environment's secret only under a name its caller
 * passed (actions/runner#1490), so the list is also what the job can read.
 */
const BACKEND_SECRETS = ["PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"] as const;
export const ENVIRONMENT_SECRETS: Readonly<Record<"read" | "deploy", readonly string[]>> = {
    /** `<stack>-read`: previews and drift checks (pull requests' code). */
    read: [...BACKEND_SECRETS, "SGLANG_SERVE_READ_SSH_KEY", "SGLANG_SERVE_HOST_KEY"],
    /** `<stack>`: deploys (main, after an approval). */
    deploy: [...BACKEND_SECRETS, "SGLANG_SERVE_SSH_KEY", "SGLANG_SERVE_API_KEY", "SGLANG_SERVE_SECRET_ENVIRONMENT", "SGLANG_SERVE_HOST_KEY"],
};

/** The step of stack-job.yml that refuses a writable `file://` backend in a read job. */
export const READ_BACKEND_CHECK_STEP = "Refuse a state backend a read job could write";

export interface WorkflowFinding {
    /** The workflow's file name, as in `.github/workflows/<file>`. */
    file: string;
    /** The job's id, where the finding is one job's. */
    job?: string;
    rule:
        | "no-secrets-inherit"
        | "no-pull-request-target"
        | "named-secrets"
        | "pull-request-operation"
        | "fork-filter"
        | "deploy-trigger"
        | "runner-labels"
        | "read-backend-check"
        | "parse";
    message: string;
}

const FORK_FILTER = "github.event.pull_request.head.repo.full_name == github.repository";

type Triggers = ReadonlySet<string>;

/** The event names a workflow's `on:` lists (a string, a list, or a map). */
function triggersOf(doc: Record<string, unknown>): Triggers {
    // js-yaml reads the YAML 1.1 key `on` as the string "on" (YAML 1.2 core schema: no boolean `on`).
    const on = doc["on"];
    if (typeof on === "string") return new Set([on]);
    if (Array.isArray(on)) return new Set(on.filter((e): e is string => typeof e === "string"));
    if (isRecord(on)) return new Set(Object.keys(on));
    return new Set();
}

const runsPullRequestCode = (triggers: Triggers) => triggers.has("pull_request") || triggers.has("pull_request_target");

/** `${{ secrets.NAME }}`, the only shape a passed secret may take: the same name on both sides. */
const SAME_NAME_SECRET = /^\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;

function isOperation(value: unknown): value is StackOperation {
    return value === "preview" || value === "drift" || value === "deploy";
}

/** Checks every workflow (file name -> text) against the rules; no findings means they hold. */
export function lintWorkflows(files: ReadonlyMap<string, string>): WorkflowFinding[] {
    const findings: WorkflowFinding[] = [];
    const docs = new Map<string, Record<string, unknown>>();
    for (const [file, text] of files) {
        let doc: unknown;
        try {
            doc = yaml.load(text);
        } catch (err) {
            findings.push({ file, rule: "parse", message: `${file} is not YAML: ${(err as Error).message}` });
            continue;
        }
        if (!isRecord(doc)) {
            findings.push({ file, rule: "parse", message: `${file} is not a workflow (a YAML map)` });
            continue;
        }
        docs.set(file, doc);
    }

    /** The operations each caller runs the stack job with, for the runner-label rule. */
    const operations = new Set<StackOperation>();
    /** Whether a scheduled workflow (run from the default branch) runs a drift check: main's copy of the read-backend check. */
    let scheduledDrift = false;
    for (const [file, doc] of docs) {
        const triggers = triggersOf(doc);
        if (triggers.has("pull_request_target")) {
            findings.push({
                file,
                rule: "no-pull-request-target",
                message: `${file} runs on pull_request_target: that runs with the base branch's cache scope and a token that can write, so a pull request's cache entries would reach main's deploys. Use pull_request (its cache entries stay on the pull request's branch).`,
            });
        }
        const jobs = isRecord(doc.jobs) ? doc.jobs : {};
        for (const [job, body] of Object.entries(jobs)) {
            if (!isRecord(body)) continue;
            if (body.secrets === "inherit") {
                findings.push({
                    file,
                    job,
                    rule: "no-secrets-inherit",
                    message: `${file}: job '${job}' passes \`secrets: inherit\`, which hands the called workflow every repository and organization secret (and, with the environment it names, every secret of that environment). Pass the named secrets of its environment instead, each as \`NAME: \${{ secrets.NAME }}\`.`,
                });
            }
            if (body.uses !== STACK_JOB) continue;
            const withInputs = isRecord(body.with) ? body.with : {};
            const operation = withInputs.operation;
            if (!isOperation(operation)) {
                findings.push({
                    file,
                    job,
                    rule: "pull-request-operation",
                    message: `${file}: job '${job}' calls ${STACK_JOB} with operation ${JSON.stringify(operation)}: give one of preview, drift, deploy as a literal`,
                });
                continue;
            }
            operations.add(operation);
            if (operation === "drift" && triggers.has("schedule")) scheduledDrift = true;
            const environment = operation === "deploy" ? "deploy" : "read";
            if (isRecord(body.secrets)) {
                const allowed = ENVIRONMENT_SECRETS[environment];
                for (const [name, value] of Object.entries(body.secrets)) {
                    const same = typeof value === "string" ? SAME_NAME_SECRET.exec(value.trim()) : null;
                    if (!same || same[1] !== name) {
                        findings.push({
                            file,
                            job,
                            rule: "named-secrets",
                            message: `${file}: job '${job}' passes secret ${name} as ${JSON.stringify(value)}: pass it under its own name, \`${name}: \${{ secrets.${name} }}\``,
                        });
                    } else if (!allowed.includes(name)) {
                        findings.push({
                            file,
                            job,
                            rule: "named-secrets",
                            message: `${file}: job '${job}' (operation ${operation}) passes ${name}, which is not a secret of the ${environment === "deploy" ? "<stack>" : "<stack>-read"} environment (${allowed.join(", ")}): remove it`,
                        });
                    }
                }
            }
            if (runsPullRequestCode(triggers)) {
                if (operation !== "preview") {
                    findings.push({
                        file,
                        job,
                        rule: "pull-request-operation",
                        message: `${file}: job '${job}' runs a ${operation} from a pull request trigger: pull requests get previews only (operation: preview)`,
                    });
                }
                if (typeof body.if !== "string" || !body.if.includes(FORK_FILTER)) {
                    findings.push({
                        file,
                        job,
                        rule: "fork-filter",
                        message: `${file}: job '${job}' runs pull requests' code on the box runner without \`if: ${FORK_FILTER}\`: add it (branches of this repository only, never forks)`,
                    });
                }
            }
            if (operation === "deploy") {
                const other = [...triggers].filter((t) => t !== "push" && t !== "workflow_dispatch");
                if (other.length > 0) {
                    findings.push({
                        file,
                        job,
                        rule: "deploy-trigger",
                        message: `${file}: job '${job}' deploys on ${other.join(", ")}: deploys run on push to main or by hand only`,
                    });
                }
                if (body.if !== "github.ref == 'refs/heads/main'") {
                    findings.push({
                        file,
                        job,
                        rule: "deploy-trigger",
                        message: `${file}: job '${job}' deploys without \`if: github.ref == 'refs/heads/main'\`: add it`,
                    });
                }
            }
        }
    }

    const stackJobFile = STACK_JOB.replace("./.github/workflows/", "");
    const stackJob = docs.get(stackJobFile);
    if (stackJob) {
        findings.push(...lintStackJob(stackJobFile, stackJob, operations));
        if (!scheduledDrift) {
            findings.push({
                file: stackJobFile,
                rule: "read-backend-check",
                message: `no scheduled workflow calls ${STACK_JOB} with operation drift: the read-backend check then runs only in pull requests' copies, which they can edit; keep drift.yml's schedule`,
            });
        }
    }
    return findings;
}

/** The stack job's own rules: deploys on a runner label of their own; a read job refuses a writable backend. */
function lintStackJob(file: string, doc: Record<string, unknown>, operations: ReadonlySet<StackOperation>): WorkflowFinding[] {
    const findings: WorkflowFinding[] = [];
    const jobs = isRecord(doc.jobs) ? doc.jobs : {};
    for (const [job, body] of Object.entries(jobs)) {
        if (!isRecord(body)) continue;
        // With the variables unset (the defaults), and with each variable set to a value of its own
        // (so two operations reading one variable would share its label).
        const varsCases: Array<{ what: string; vars: (name: string) => string | null }> = [
            { what: "with the repository variables unset", vars: () => null },
            { what: "with each repository variable set", vars: (name) => `<vars.${name}>` },
        ];
        for (const { what, vars } of varsCases) {
            const labels = new Map<StackOperation, string[]>();
            try {
                for (const op of new Set<StackOperation>([...operations, "deploy"]))
                    labels.set(op, runnerLabels(body["runs-on"], { inputs: { operation: op }, vars }));
            } catch (err) {
                findings.push({ file, job, rule: "runner-labels", message: `${file}: job '${job}': runs-on cannot be read: ${(err as Error).message}` });
                break;
            }
            const deploy = new Set((labels.get("deploy") ?? []).filter((l) => l !== "self-hosted"));
            for (const [op, opLabels] of labels) {
                if (op === "deploy") continue;
                const shared = opLabels.filter((l) => deploy.has(l));
                const own = opLabels.filter((l) => l !== "self-hosted");
                if (shared.length > 0 || deploy.size === 0 || own.length === 0) {
                    findings.push({
                        file,
                        job,
                        rule: "runner-labels",
                        message: `${file}: job '${job}' runs ${op} on [${opLabels.join(", ")}] and deploy on [${[...(labels.get("deploy") ?? [])].join(", ")}] ${what}: a deploy needs a runner label of its own (vars.DEPLOY_RUNNER_LABEL, default sglang-deploy), so a job that runs pull requests' code never runs where the deploy key's agent will`,
                    });
                }
            }
        }
        const steps = Array.isArray(body.steps) ? body.steps.filter(isRecord) : [];
        const check = steps.find((s) => s.name === READ_BACKEND_CHECK_STEP);
        if (!check || typeof check.run !== "string" || !check.run.includes("file://") || !check.run.includes("-w ") || check.if !== undefined) {
            findings.push({
                file,
                job,
                rule: "read-backend-check",
                message: `${file}: job '${job}' lacks the step '${READ_BACKEND_CHECK_STEP}' (a run script, with no if:, refusing a writable file:// backend in a preview or drift job): drift.yml runs it from main every 6 hours, where no pull request can edit it`,
            });
        }
    }
    return findings;
}

interface ExpressionContext {
    inputs: Readonly<Record<string, string>>;
    vars: (name: string) => string | null;
}

/** A runs-on value's labels, each `${{ }}` in them evaluated. */
export function runnerLabels(runsOn: unknown, ctx: ExpressionContext): string[] {
    const list = typeof runsOn === "string" ? [runsOn] : Array.isArray(runsOn) ? runsOn : undefined;
    if (!list || !list.every((l): l is string => typeof l === "string")) {
        throw new Error(`runs-on must be a label or a list of labels, not ${JSON.stringify(runsOn)}`);
    }
    return list.map((label) => label.replace(/\$\{\{(.*?)\}\}/g, (_m, expr: string) => toText(evaluateExpression(expr, ctx))));
}

type Value = string | boolean | null;

const toText = (v: Value) => (v === null ? "" : String(v));
// GitHub's falsy values: false, 0, -0, "", null.
const truthy = (v: Value) => v !== null && v !== false && v !== "";

/**
 * The subset of GitHub's expression language the stack job's runs-on uses:
 * string literals, `inputs.X` and `vars.X`, `==`/`!=` (strings compare
 * ignoring case, as GitHub does), `!`, `&&` and `||` (returning an operand, as
 * GitHub does), and parentheses. Anything else is an error, never a guess.
 */
export function evaluateExpression(expr: string, ctx: ExpressionContext): Value {
    const tokens = expr.match(/\s+|'(?:[^']|'')*'|&&|\|\||==|!=|!|\(|\)|[A-Za-z_][A-Za-z0-9_.-]*|./g) ?? [];
    const toks = tokens.filter((t) => !/^\s+$/.test(t));
    let i = 0;
    const peek = () => toks[i];
    const next = () => toks[i++];
    const fail = (what: string): never => {
        throw new Error(`expression ${JSON.stringify(expr.trim())}: ${what}`);
    };
    const primary = (): Value => {
        const t = next();
        if (t === undefined) return fail("ends early");
        if (t === "(") {
            const v = or();
            if (next() !== ")") fail("a ( is not closed");
            return v;
        }
        if (t === "!") return !truthy(primary());
        if (t.startsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
        if (t === "true" || t === "false") return t === "true";
        if (t === "null") return null;
        const [context, name, ...rest] = t.split(".");
        if (name === undefined || rest.length > 0) return fail(`${t} is not one of inputs.X, vars.X`);
        if (context === "inputs") return ctx.inputs[name] ?? null;
        if (context === "vars") return ctx.vars(name);
        return fail(`${t}: only inputs and vars can be read here`);
    };
    const comparison = (): Value => {
        const left = primary();
        const op = peek();
        if (op !== "==" && op !== "!=") return left;
        next();
        const right = primary();
        const equal = typeof left === "string" && typeof right === "string" ? left.toLowerCase() === right.toLowerCase() : left === right;
        return op === "==" ? equal : !equal;
    };
    const and = (): Value => {
        let v = comparison();
        while (peek() === "&&") {
            next();
            const r = comparison();
            v = truthy(v) ? r : v;
        }
        return v;
    };
    const or = (): Value => {
        let v = and();
        while (peek() === "||") {
            next();
            const r = and();
            v = truthy(v) ? v : r;
        }
        return v;
    };
    const value = or();
    if (i < toks.length) fail(`unexpected ${toks[i]}`);
    return value;
}

/** One line per finding, for a terminal. */
export function formatFindings(findings: readonly WorkflowFinding[]): string {
    return findings.map((f) => `.github/workflows/${f.file}${f.job ? ` (job ${f.job})` : ""}: [${f.rule}] ${f.message}`).join("\n");
}
