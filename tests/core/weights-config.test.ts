import assert from "node:assert/strict";
import { validateStackConfig } from "../../core/config/config";
import { ConfigIssue, formatConfigIssues } from "../../core/config/issues";
import { ServiceSchema, StackConfig } from "../../core/config/schema";
import { renderArgv } from "../../core/sglang/args";
import { revisionQueryKey, unpinnedRevisionMessage, unpinnedRevisions } from "../../core/weights/revision-pins";
import { revisionFolder } from "../../core/weights/weights-layout";
import { DFLASH_BLOCK, fieldConfig, FieldRaw, withField } from "./fixtures";

const A = "0123456789abcdef0123456789abcdef01234567";
const B = "89abcdef0123456789abcdef0123456789abcdef";

/** A raw source as the config writes it. */
interface RawSource {
    hf: string;
    revision: string;
    endpoint?: string;
    allowPatterns?: string[];
    token?: string;
}
type Raw = Omit<FieldRaw, "service"> & {
    service: Omit<FieldRaw["service"], "model" | "speculative" | "environment"> & {
        model: Partial<FieldRaw["service"]["model"]> & { source?: RawSource };
        speculative: Record<string, unknown>;
        weights?: Record<string, unknown>;
        environment: Record<string, string>;
    };
};

const edit = (change: (raw: Raw) => void) => withField((r) => change(r as unknown as Raw));

/** The field's config serving Tiny-Qwen3 from a source, with a DFLASH drafter from a source. */
function withSources(change: (raw: Raw) => void = () => {}): FieldRaw {
    return edit((raw) => {
        delete raw.service.model.path;
        raw.service.model.source = { hf: "sglang-lab/Tiny-Qwen3", revision: A };
        const { draftModelPath: _unused, ...dflash } = DFLASH_BLOCK;
        raw.service.speculative = { ...dflash, draftModelSource: { hf: "sglang-lab/Tiny-Qwen3-DFlash", revision: B } };
        change(raw);
    });
}

function issuesOf(raw: unknown, where: Parameters<typeof validateStackConfig>[1] = {}): ConfigIssue[] {
    const result = validateStackConfig(raw, where);
    assert.equal(result.ok, false, "expected the config to be rejected");
    return result.ok ? [] : result.issues;
}

function issueAt(raw: unknown, path: string, where: Parameters<typeof validateStackConfig>[1] = {}): ConfigIssue {
    const issues = issuesOf(raw, where);
    const found = issues.find((i) => i.path === path);
    assert.ok(found, `no issue at ${path}; got: ${issues.map((i) => `${i.path}: ${i.message}`).join("\n")}`);
    return found;
}

function accepted(raw: unknown): StackConfig {
    const result = validateStackConfig(raw);
    assert.ok(result.ok, result.ok ? "" : formatConfigIssues(result.issues));
    return result.config;
}

describe("weights as code: the config of a pinned source (service.model.source, service.speculative.draftModelSource)", () => {
    it("serves a declared source's revision folder, <root>/<org>--<name>/<revision>, under /models by default: the unit's --model-path and --speculative-draft-model-path name it", () => {
        const server = accepted(withSources()).servers[0]!;
        assert.equal(server.model.path, `/models/sglang-lab--Tiny-Qwen3/${A}`);
        assert.equal(server.speculative?.draftModelPath, `/models/sglang-lab--Tiny-Qwen3-DFlash/${B}`);
        assert.deepEqual(server.model.source, { hf: "sglang-lab/Tiny-Qwen3", revision: A });
        const argv = renderArgv(server);
        assert.equal(argv[argv.indexOf("--model-path") + 1], `/models/sglang-lab--Tiny-Qwen3/${A}`);
        assert.equal(argv[argv.indexOf("--speculative-draft-model-path") + 1], `/models/sglang-lab--Tiny-Qwen3-DFlash/${B}`);
    });

    it("takes the models root from service.weights.root, with keepPrevious and the download budget defaulted", () => {
        const server = accepted(withSources((raw) => (raw.service.weights = { root: "/srv/weights/" }))).servers[0]!;
        assert.equal(server.model.path, `/srv/weights/sglang-lab--Tiny-Qwen3/${A}`);
        assert.deepEqual(server.weights, { root: "/srv/weights/", keepPrevious: 1, downloadTimeoutSeconds: 86400 });
        assert.equal(revisionFolder("/srv/weights/", { hf: "a/b", revision: A }), `/srv/weights/a--b/${A}`);
    });

    it("leaves a config without sources exactly as it parsed before: no weights section, the declared folders", () => {
        const server = accepted(fieldConfig()).servers[0]!;
        assert.equal("weights" in server, false);
        assert.equal(server.model.path, "/models/Qwen3.6-27B");
        assert.equal("source" in server.model, false);
    });

    it("refuses source and path both set, naming the key and both ways out", () => {
        const issue = issueAt(
            withSources((raw) => (raw.service.model.path = "/models/Qwen3.6-27B")),
            "service.model.path",
        );
        assert.equal(issue.value, "/models/Qwen3.6-27B");
        assert.match(issue.message, /^service\.model\.path is set, and so is model\.source: keep one\./);
        assert.match(issue.message, new RegExp(`stages the pinned revision in /models/sglang-lab--Tiny-Qwen3/${A}`));
    });

    it("refuses draftModelSource and draftModelPath both set, and a draftModelDigest beside a draftModelSource", () => {
        const both = issueAt(
            withSources((raw) => (raw.service.speculative.draftModelPath = "/models/dflash-drafter")),
            "service.speculative.draftModelPath",
        );
        assert.match(both.message, /is set, and so is speculative\.draftModelSource: keep one/);
        const digest = issueAt(
            withSources((raw) => (raw.service.speculative.draftModelDigest = "0123456789abcdef0123456789abcdef")),
            "service.speculative.draftModelDigest",
        );
        assert.match(digest.message, /pins the drafter itself .*: remove draftModelDigest/);
    });

    it("asks for a path or a source when neither is set", () => {
        const issue = issueAt(
            edit((raw) => delete raw.service.model.path),
            "service.model.path",
        );
        assert.match(issue.message, /^service\.model\.path is required: add it .*, or model\.source instead/);
    });

    it("still runs the other rules on a server whose path and source are both set (the path set aside), so one pass reports everything", () => {
        const issues = issuesOf(
            withSources((raw) => {
                raw.service.model.path = "/models/Qwen3.6-27B";
                raw.service.model.source!.revision = "main";
            }),
        );
        assert.deepEqual(
            issues.map((i) => i.path),
            ["service.model.path", "service.model.source.revision"],
        );
    });

    it("refuses a branch or tag name, naming the key, the value and the commit it resolves to now as the line to pin", () => {
        const raw = withSources(
            (r) => (r.service.speculative.draftModelSource = { hf: "sglang-lab/Tiny-Qwen3-DFlash", revision: "main", endpoint: "http://127.0.0.1:8090/" }),
        );
        const [query] = unpinnedRevisions(raw);
        assert.deepEqual(query, {
            key: "service.speculative.draftModelSource.revision",
            hf: "sglang-lab/Tiny-Qwen3-DFlash",
            revision: "main",
            endpoint: "http://127.0.0.1:8090",
        });
        const resolvedRevisions = new Map([[revisionQueryKey(query!), { sha: B }]]);
        const issue = issueAt(raw, "service.speculative.draftModelSource.revision", { resolvedRevisions });
        assert.equal(issue.value, "main");
        assert.equal(
            issue.message,
            'service.speculative.draftModelSource.revision is "main", a branch or tag name: it moves, and the stack pins weights to one commit, so that the same config always serves the same bytes. ' +
                `At http://127.0.0.1:8090, sglang-lab/Tiny-Qwen3-DFlash "main" is commit ${B} now: pin it with\n    revision: ${B}`,
        );
    });

    it("leaves a branch or tag name to the SglangService's check at the program's load (revisionsAtCheck), which asks the Hub; everything else still judged", () => {
        const raw = withSources((r) => (r.service.speculative.draftModelSource = { hf: "sglang-lab/Tiny-Qwen3-DFlash", revision: "main" }));
        const loaded = validateStackConfig(raw, { revisionsAtCheck: true });
        assert.ok(loaded.ok, loaded.ok ? "" : formatConfigIssues(loaded.issues));
        assert.equal(loaded.config.servers[0]!.speculative?.draftModelSource?.revision, "main");
        // Without it (npm run render, the bench's fleet), the rule refuses it as before.
        issueAt(raw, "service.speculative.draftModelSource.revision");
    });

    it("names an unpinned revision beside any other bad key at the program's load, so one pass reports every bad key", () => {
        const raw = withSources((r) => {
            r.service.model.source!.revision = "v1";
            (r.service as Record<string, unknown>).port = 70000;
        });
        assert.deepEqual(
            issuesOf(raw, { revisionsAtCheck: true })
                .map((i) => i.path)
                .sort(),
            ["service.model.source.revision", "service.port"],
        );
    });

    it("without an answer from the Hub, says how to find the commit; with a failed one, says why", () => {
        const q = { key: "service.model.source.revision", hf: "sglang-lab/Tiny-Qwen3", revision: "v1", endpoint: "https://huggingface.co" };
        assert.match(
            unpinnedRevisionMessage(q),
            /: pin its full 40-hex commit id \(the preview names it when it can reach https:\/\/huggingface\.co; `git ls-remote https:\/\/huggingface\.co\/sglang-lab\/Tiny-Qwen3 v1` prints it\)\.$/,
        );
        assert.match(
            unpinnedRevisionMessage(q, { error: "404 RevisionNotFound" }),
            /Asking https:\/\/huggingface\.co what it names failed \(404 RevisionNotFound\)/,
        );
    });

    it("refuses an abbreviated commit and an upper-case one, the latter with its lower-case spelling", () => {
        assert.match(
            issueAt(
                withSources((r) => (r.service.model.source!.revision = A.slice(0, 12))),
                "service.model.source.revision",
            ).message,
            /an abbreviated commit id/,
        );
        const upper = issueAt(
            withSources((r) => (r.service.model.source!.revision = A.toUpperCase())),
            "service.model.source.revision",
        );
        assert.match(upper.message, new RegExp(`in upper case: .*\\n    revision: ${A}$`));
    });

    it("files a server's unpinned revision under its own key in servers, and asks the Hub about it", () => {
        const raw = withSources((r) => (r.service.model.source!.revision = "main")) as unknown as Record<string, unknown>;
        raw.servers = [raw.service];
        delete raw.service;
        assert.deepEqual(
            unpinnedRevisions(raw).map((q) => q.key),
            ["servers[0].model.source.revision"],
        );
        assert.match(issueAt(raw, "servers[0].model.source.revision").message, /^servers\[0\]\.model\.source\.revision is "main"/);
    });

    it("refuses a token in a source without printing it, and says where the token goes", () => {
        const raw = withSources((r) => (r.service.model.source!.token = "hf_abcdefghijklmnopqrstuvwxyz0123"));
        const issue = issueAt(raw, "service.model.source.token");
        assert.match(issue.message, /add HF_TOKEN to service\.secretEnvironment/);
        const text = formatConfigIssues(issuesOf(raw));
        assert.ok(!text.includes("hf_abcdefghij"), text);
        assert.match(text, /service\.model\.source\.token = \[secret\]/);
    });

    it("refuses HF_TOKEN in service.environment (the secret-like names rule) and takes it in secretEnvironment", () => {
        const issue = issueAt(
            withSources((r) => (r.service.environment = { ...r.service.environment, HF_TOKEN: "hf_abcdefghijklmnopqrstuvwxyz0123" })),
            "service.environment.HF_TOKEN",
        );
        assert.equal(issue.value, "[secret]");
        assert.match(issue.message, /move the name to sglang-serve:service\.secretEnvironment/);
        accepted(withSources((r) => (r.service.secretEnvironment = ["HF_TOKEN"])));
    });

    it("refuses an endpoint over plain http to another host, or with credentials, and takes https and loopback http", () => {
        assert.match(
            issueAt(
                withSources((r) => (r.service.model.source!.endpoint = "http://mirror.example:8090")),
                "service.model.source.endpoint",
            ).message,
            /plain http:\/\/ to mirror\.example:8090, which is not a loopback host/,
        );
        const creds = issuesOf(withSources((r) => (r.service.model.source!.endpoint = "https://user:pw@mirror.example")));
        assert.match(creds[0]!.message, /without credentials: the token goes in service\.secretEnvironment/);
        assert.ok(!formatConfigIssues(creds).includes("user:pw"));
        accepted(withSources((r) => (r.service.model.source!.endpoint = "https://hf-mirror.example/")));
        accepted(withSources((r) => (r.service.model.source!.endpoint = "http://127.0.0.1:8090")));
    });

    it("refuses a repository id without its organisation, or with characters the Hub refuses", () => {
        for (const hf of ["Tiny-Qwen3", "org/na me", "org--x/name", "../x"]) {
            const issue = issueAt(
                withSources((r) => (r.service.model.source!.hf = hf)),
                "service.model.source.hf",
            );
            assert.match(issue.message, /must be a Hugging Face model repository as "org\/name"/, hf);
        }
    });

    it("takes allow and ignore patterns and refuses one with shell syntax", () => {
        accepted(withSources((r) => (r.service.model.source!.allowPatterns = ["*.safetensors", "*.json", "tokenizer*"])));
        assert.match(
            issueAt(
                withSources((r) => (r.service.model.source!.allowPatterns = ["$(reboot)"])),
                "service.model.source.allowPatterns[0]",
            ).message,
            /must be a huggingface_hub file pattern/,
        );
    });

    it("says that service.weights has no effect without a source", () => {
        const result = validateStackConfig(edit((r) => (r.service.weights = { root: "/srv/weights" })));
        assert.ok(result.ok);
        assert.ok(result.notices.some((n) => /service\.weights is set, but neither/.test(n)));
    });

    it("suggests the right key for a misspelt one under the service (through the folders' transform)", () => {
        const issue = issueAt(
            edit((r) => ((r.service as unknown as Record<string, unknown>).weight = { root: "/x" })),
            "service.weight",
        );
        assert.match(issue.message, /did you mean weights\?/);
    });

    it("ServiceSchema.parse gives the filled folder to code that parses a service on its own", () => {
        const raw = withSources().service;
        assert.equal(ServiceSchema.parse(raw).model.path, `/models/sglang-lab--Tiny-Qwen3/${A}`);
    });
});
