import assert from "node:assert/strict";
import fc from "fast-check";
import { ServiceConfig, ServiceSchema } from "../../core/config/schema";
import { forbiddenCharacter } from "../../core/sglang/extra-args";
import { argvFieldsOf, resolveLauncher, serveExecutable } from "../../core/sglang/args";
import { servicePython } from "../../core/venv/venv-layout";
import {
    escapeExecArg,
    escapeSpecifiers,
    parseEnvironmentFile,
    parseExecStart,
    parseUnit,
    quoteWord,
    renderEnvironmentFile,
    renderExecStart,
    renderServerConfigFile,
    renderUnit,
    serverEnvironment,
    serviceFromUnit,
    splitWords,
    unescapeSpecifiers,
    unitOwner,
    unitTextOfServer,
    unitTextWithoutOwner,
    unitValues,
    UnitSyntaxError,
} from "../../core/unit/systemd-unit";
import { ENVIRONMENT_FILE_MODE, environmentFilePath, serverConfigFilePath, unitName } from "../../core/unit/unit-paths";
import { fieldConfig, fieldService, serviceConfig, SystemdRoot } from "./fixtures";

/** What serviceFromUnit should read back from renderUnit(service, { hasSecrets }): the declared fields, environment and files. */
function expectedUnitService(service: ServiceConfig, opts: { hasSecrets: boolean }) {
    return {
        fields: argvFieldsOf(service, opts.hasSecrets ? { configFile: serverConfigFilePath(service.name) } : {}),
        environment: { ...service.environment },
        environmentFiles: opts.hasSecrets ? [environmentFilePath(service.name)] : [],
    };
}

/** The shapes of extraArgs the config accepts (issue 18, item 4). */
const ACCEPTED_EXTRA_ARGS: readonly string[][] = [
    ["--reasoning-parser", "qwen3"],
    ["--cuda-graph-bs", "1", "2", "4", "8"],
    ["--json-model-override-args", '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}'],
    ["--enable-metrics", "--context-length=32768"],
    ["--chat-template", "a b", "--x", "-1", "--y=$HOME", "--z", "100%", "--w", "a\\b", "--v", ";", "--u", "\\;", "--t", "字 😀", "--s", "${SGLANG_API_KEY}"],
];

/** The field service with these extraArgs, as the schema passes them on (tests/core/config.test.ts: it accepts each). */
function withExtra(extraArgs: readonly string[]): ServiceConfig {
    return { ...fieldService(), extraArgs: [...extraArgs] };
}

function executableOf(service: ServiceConfig): string {
    return resolveLauncher(service) === "serve" ? serveExecutable(servicePython(service)) : servicePython(service);
}

/** Strings with everything systemd and shells treat specially, plus non-ASCII. NUL excluded: no argv can carry it. */
const hostileChar = fc.oneof(
    fc.constantFrom(
        " ",
        "\t",
        "\n",
        "\r",
        '"',
        "'",
        "\\",
        "$",
        "%",
        "{",
        "}",
        ";",
        "#",
        "=",
        "`",
        "*",
        "?",
        "~",
        "!",
        "&",
        "|",
        "<",
        ">",
        "\x01",
        "\x1b",
        "\x7f",
        "é",
        "字",
        "😀",
    ),
    fc.string({ minLength: 1, maxLength: 1, unit: "grapheme-ascii" }),
);
const hostileString = fc.string({ unit: hostileChar, maxLength: 24 }).filter((s) => !s.includes("\0"));

/** Hostile text the config accepts as an extraArgs value or environment value (no NUL, line breaks or other control characters). */
const configurableText = fc.oneof(
    hostileString.filter((s) => forbiddenCharacter(s) === undefined),
    fc.constantFrom("${SGLANG_API_KEY}", "$SGLANG_API_KEY", "%i", "%%", ";", "\\;", "\\", '{"a": "b\\"c", "d": [1, -2.5]}'),
);

/** extraArgs of every form with hostile values: `--flag=<text>` and `--flag <value>...` (a value does not start with -). */
const hostileExtraArgs = fc
    .array(
        fc.oneof(
            configurableText.map((v) => [`--extra-inline=${v}`]),
            fc
                .array(
                    configurableText.filter((v) => !v.startsWith("-")),
                    { minLength: 1, maxLength: 3 },
                )
                .map((vs) => ["--extra-values", ...vs]),
        ),
        { minLength: 1, maxLength: 3 },
    )
    .map((groups) => groups.map((g, i) => [g[0].replace("--extra-", `--extra${i}-`), ...g.slice(1)]).flat());

function deepEqualJson(a: unknown, b: unknown): boolean {
    return JSON.stringify(a) === JSON.stringify(b);
}

describe("systemd unit: names and the environment file", () => {
    it("names the unit and its files after the service", () => {
        assert.equal(unitName("qwen"), "sglang-qwen.service");
        assert.equal(environmentFilePath("qwen"), "/etc/sglang/qwen.env");
        assert.equal(ENVIRONMENT_FILE_MODE, 0o600);
    });

    it("writes secrets as NAME=value lines that read back", () => {
        const text = renderEnvironmentFile({ SGLANG_API_KEY: "k3y-0123456789abcdef" });
        assert.match(text, /^SGLANG_API_KEY=k3y-0123456789abcdef$/m);
        assert.deepEqual(parseEnvironmentFile(text), { SGLANG_API_KEY: "k3y-0123456789abcdef" });
    });

    it("refuses values systemd's env-file parser would read differently", () => {
        for (const value of ["a b", 'a"b', "a$b", "a\\b", "a\nb", "#x"]) {
            assert.throws(() => renderEnvironmentFile({ SGLANG_API_KEY: value }), UnitSyntaxError, value);
        }
    });
});

describe("systemd unit: rendering", () => {
    const text = renderUnit(fieldService(), { hasSecrets: true, startupTimeoutSeconds: 900 });
    const unit = parseUnit(text);

    it("starts with a managed-by header saying that edits are drift", () => {
        assert.equal(text.split("\n")[0], "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`.");
        assert.equal(unit.header[0], text.split("\n")[0]);
    });

    it("has the sections and settings the server needs", () => {
        const one = (section: string, key: string) => unitValues(unit, section, key);
        assert.deepEqual(one("Unit", "After"), ["network-online.target"]);
        assert.deepEqual(one("Unit", "Wants"), ["network-online.target"]);
        assert.deepEqual(one("Unit", "StartLimitBurst"), ["3"]);
        assert.deepEqual(one("Unit", "StartLimitIntervalSec"), ["600"]);
        assert.deepEqual(one("Service", "Type"), ["simple"]);
        assert.deepEqual(one("Service", "Environment"), ["SGLANG_ENABLE_SPEC_V2=1"]);
        assert.deepEqual(one("Service", "EnvironmentFile"), ["/etc/sglang/qwen.env"]);
        assert.deepEqual(one("Service", "Restart"), ["on-failure"]);
        assert.deepEqual(one("Service", "RestartSec"), ["10"]);
        assert.deepEqual(one("Service", "TimeoutStartSec"), ["900"]);
        assert.deepEqual(one("Service", "KillMode"), ["control-group"]);
        assert.deepEqual(one("Install", "WantedBy"), ["multi-user.target"]);
    });

    it("passes the API key through SGLang's 0600 config file, so neither the unit nor the command line holds it", () => {
        assert.match(text, /--config \/etc\/sglang\/qwen\.yaml/);
        assert.doesNotMatch(text, /--api-key|SGLANG_API_KEY/);
    });

    it("writes SGLANG_ENABLE_SPEC_V2 only for a release that reads it (to 0.5.13)", () => {
        const environmentOf = (version: string) =>
            unitValues(parseUnit(renderUnit({ ...fieldService(), sglangVersion: version }, { hasSecrets: false })), "Service", "Environment");
        assert.deepEqual(environmentOf("0.5.11"), ["SGLANG_ENABLE_SPEC_V2=1"]);
        assert.deepEqual(environmentOf("0.5.13"), ["SGLANG_ENABLE_SPEC_V2=1"]);
        assert.deepEqual(environmentOf("0.5.14"), []);
        assert.deepEqual(environmentOf("0.5.23"), []);
        assert.deepEqual(serverEnvironment({ environment: { SGLANG_ENABLE_SPEC_V2: "1", HF_HOME: "/models" }, sglangVersion: "0.5.23" }), {
            HF_HOME: "/models",
        });
    });

    it("has no EnvironmentFile and no --config without secrets", () => {
        const plain = renderUnit(fieldService(), { hasSecrets: false });
        assert.doesNotMatch(plain, /EnvironmentFile=|--api-key|--config/);
    });

    it("has the EnvironmentFile but no --config with a secret environment and no API key", () => {
        const secretOnly = renderUnit(fieldService(), { hasSecrets: false, hasSecretEnvironment: true });
        assert.match(secretOnly, /^EnvironmentFile=\/etc\/sglang\/qwen\.env$/m);
        assert.doesNotMatch(secretOnly, /--config|--api-key/);
    });

    it("writes the key in SGLang's config file as argparse spells the flag, quoted so YAML keeps it a string", () => {
        assert.equal(
            renderServerConfigFile("0123456789abcdef"),
            '# Managed by sglang-serve: read by SGLang (--config); mode 0600.\napi-key: "0123456789abcdef"\n',
        );
        assert.throws(() => renderServerConfigFile('bad"key\nx: 1'), UnitSyntaxError);
    });

    it("puts one flag per ExecStart line", () => {
        assert.match(
            text,
            /ExecStart=\/opt\/sglang\/venv\/bin\/sglang serve \\\n {4}--model-path \/models\/Qwen3\.6-27B \\\n {4}--served-model-name qwen3\.6-27b \\\n/,
        );
    });

    it("puts a multi-value flag on one line and quotes a JSON value as one word", () => {
        const text = renderUnit(withExtra(ACCEPTED_EXTRA_ARGS[1]), { hasSecrets: false });
        assert.match(text, /\n {4}--cuda-graph-bs 1 2 4 8\n/);
        const json = renderUnit(withExtra(ACCEPTED_EXTRA_ARGS[2]), { hasSecrets: false });
        assert.match(json, /\n {4}--json-model-override-args "\{\\"rope_scaling\\": \{\\"rope_type\\": \\"yarn\\", \\"factor\\": 4\.0, /);
    });

    it("writes ${SGLANG_API_KEY} in extraArgs as literal text, never the key: nothing in ExecStart is expanded, the key is in --config's file", () => {
        const svc = withExtra(["--x", "${SGLANG_API_KEY}", "--y=${SGLANG_API_KEY}"]);
        const text = renderUnit(svc, { hasSecrets: true });
        const execStart = unitValues(parseUnit(text), "Service", "ExecStart")[0]!;
        assert.equal(execStart.match(/(?<!\$)\$\{SGLANG_API_KEY\}/g), null, execStart);
        assert.match(execStart, /--config \/etc\/sglang\/qwen\.yaml/);
        assert.match(execStart, /--x \$\$\{SGLANG_API_KEY\}/);
        assert.match(execStart, /--y=\$\$\{SGLANG_API_KEY\}/);
        assert.deepEqual(serviceFromUnit(text).fields.extraArgs, svc.extraArgs);
    });

    it("writes environment values with spaces, quotes, %, $ and \\ so that systemd reads them back exactly", () => {
        const environment = { A: "two words", B: 'say "hi"', C: "50%", D: "${HOME} $X", E: "a\\b;c", F: "it's\tok" };
        const svc = ServiceSchema.parse({ ...fieldConfig().service, environment });
        const text = renderUnit(svc, { hasSecrets: false });
        assert.match(text, /^Environment="A=two words"$/m);
        assert.match(text, /^Environment="B=say \\"hi\\""$/m);
        assert.match(text, /^Environment=C=50%%$/m);
        assert.match(text, /^Environment="D=\$\{HOME\} \$X"$/m);
        assert.deepEqual(serviceFromUnit(text).environment, environment);
    });

    it("escapes % in environment values", () => {
        const svc = ServiceSchema.parse({ ...fieldConfig().service, environment: { SGLANG_ENABLE_SPEC_V2: "1", SGLANG_X: "50%" } });
        assert.match(renderUnit(svc, { hasSecrets: false }), /^Environment=SGLANG_X=50%%$/m);
    });
});

describe("systemd unit: parsing back", () => {
    it("reads the field unit back into typed fields", () => {
        const back = serviceFromUnit(renderUnit(fieldService(), { hasSecrets: true }));
        assert.equal(back.fields.tensorParallelSize, 2);
        assert.deepEqual(back.fields.speculative, { algorithm: "NEXTN", numSteps: 1, eagleTopk: 1, numDraftTokens: 2 });
        assert.equal(back.fields.configFile, "/etc/sglang/qwen.yaml");
        assert.equal(back.fields.apiKeyInline, false);
        assert.deepEqual(back.environment, { SGLANG_ENABLE_SPEC_V2: "1" });
        assert.deepEqual(back.environmentFiles, ["/etc/sglang/qwen.env"]);
    });

    it("parse(render(service)) gives back the declared fields and environment (property)", () => {
        fc.assert(
            fc.property(serviceConfig, fc.boolean(), (svc, hasSecrets) => {
                const back = serviceFromUnit(renderUnit(svc, { hasSecrets }));
                const { argv: _argv, ...rest } = back;
                assert.deepEqual(rest, expectedUnitService(svc, { hasSecrets }));
            }),
            { numRuns: 300 },
        );
    });

    it("reads back every shape of extraArgs as the tokens declared, so a second preview compares equal", () => {
        for (const extraArgs of ACCEPTED_EXTRA_ARGS) {
            const svc = withExtra(extraArgs);
            for (const hasSecrets of [false, true]) {
                const back = serviceFromUnit(renderUnit(svc, { hasSecrets }));
                assert.deepEqual(back.argv.slice(-extraArgs.length), extraArgs);
                assert.deepEqual(back.fields.extraArgs, extraArgs);
                assert.deepEqual(back.fields, expectedUnitService(svc, { hasSecrets }).fields);
            }
        }
    });

    it("reads back a unit whose extraArgs are --flag=value tokens (as the stack wrote them before) as the same declared extraArgs", () => {
        const extraArgs = ["--enable-metrics", "--context-length=32768", "--chat-template=/t/chatml.jinja", "--x=50%"];
        const text = renderUnit(withExtra(extraArgs), { hasSecrets: true });
        assert.ok(text.includes("    --context-length=32768 \\\n    --chat-template=/t/chatml.jinja \\\n    --x=50%%\n"), text);
        assert.deepEqual(serviceFromUnit(text).fields.extraArgs, extraArgs);
    });

    it("reads back a changed extraArgs value as a change", () => {
        const declared = withExtra(["--cuda-graph-bs", "1", "2", "4", "8"]);
        const edited = renderUnit(declared, { hasSecrets: true }).replace("--cuda-graph-bs 1 2 4 8", "--cuda-graph-bs 1 2 4 16");
        assert.notDeepEqual(serviceFromUnit(edited).fields.extraArgs, declared.extraArgs);
        assert.deepEqual(serviceFromUnit(edited).fields.extraArgs, ["--cuda-graph-bs", "1", "2", "4", "16"]);
    });

    it("reads what a hand-edited unit runs", () => {
        const text = renderUnit(fieldService(), { hasSecrets: false }).replace("--tp-size 2", "--tp-size 1");
        const back = serviceFromUnit(text);
        assert.equal(back.fields.tensorParallelSize, 1);
    });

    it("reads the field's hand-written unit (launch_server, quoted Environment, no header)", () => {
        const text = [
            "[Unit]",
            "Description=SGLang Qwen",
            "[Service]",
            'Environment="SGLANG_ENABLE_SPEC_V2=1" CUDA_VISIBLE_DEVICES=0,1',
            "ExecStart=/opt/sglang/venv/bin/python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B \\",
            "  --tp 2 --speculative-algorithm NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1 \\",
            "  # a comment between continuation lines is skipped",
            "  --speculative-num-draft-tokens 2 --mamba-scheduler-strategy extra_buffer --port 30000 --host 0.0.0.0",
            "Restart=always",
        ].join("\n");
        const back = serviceFromUnit(text);
        assert.equal(back.fields.launcher, "launch_server");
        assert.equal(back.fields.speculative?.numDraftTokens, 2);
        assert.equal(back.fields.mambaSchedulerStrategy, "extra_buffer");
        assert.deepEqual(back.environment, { SGLANG_ENABLE_SPEC_V2: "1", CUDA_VISIBLE_DEVICES: "0,1" });
    });

    it("applies systemd's empty-assignment reset", () => {
        const unit = parseUnit("[Service]\nEnvironment=A=1\nEnvironment=\nEnvironment=B=2\n");
        assert.deepEqual(unitValues(unit, "Service", "Environment"), ["B=2"]);
    });
});

const KPRO5 = { project: "sglang-serve", stack: "kpro5" };
const CT129 = { project: "sglang-serve", stack: "ct129" };

describe("systemd unit: the owner", () => {
    it("records the owner as a comment line before [Unit]", () => {
        const text = renderUnit(fieldService(), { hasSecrets: true, owner: KPRO5 });
        assert.match(text, /^# Managed by sglang-serve[^\n]*\n# sglang-serve owner: sglang-serve\/kpro5\n/);
        assert.deepEqual(unitOwner(text), KPRO5);
    });

    it("reads no owner from a unit without one, or from a comment inside a section", () => {
        assert.equal(unitOwner(renderUnit(fieldService(), { hasSecrets: true })), undefined);
        assert.equal(unitOwner("[Unit]\n# sglang-serve owner: sglang-serve/kpro5\n[Service]\nExecStart=/bin/true\n"), undefined);
    });

    it("refuses an owner that is not <project>/<stack> of plain characters", () => {
        assert.throws(() => renderUnit(fieldService(), { hasSecrets: true, owner: { project: "sglang-serve", stack: "a b" } }), UnitSyntaxError);
    });

    it("compares two units without the header and owner lines: same server, other owner", () => {
        const kpro5 = renderUnit(fieldService(), { hasSecrets: true, owner: KPRO5 });
        const ct129 = renderUnit(fieldService(), { hasSecrets: true, owner: CT129 });
        const none = renderUnit(fieldService(), { hasSecrets: true });
        assert.notEqual(kpro5, ct129);
        assert.equal(unitTextWithoutOwner(kpro5), unitTextWithoutOwner(ct129));
        assert.equal(unitTextWithoutOwner(kpro5), unitTextWithoutOwner(none));
        const other = renderUnit({ ...fieldService(), memFractionStatic: 0.85 }, { hasSecrets: true, owner: KPRO5 });
        assert.notEqual(unitTextWithoutOwner(other), unitTextWithoutOwner(ct129));
    });

    it("counts units that differ only in their owner or start budget (TimeoutStartSec) as the same server, and no other difference", () => {
        const declared = renderUnit(fieldService(), { hasSecrets: true, owner: KPRO5, startupTimeoutSeconds: 120 });
        const older = renderUnit(fieldService(), { hasSecrets: true, owner: CT129 });
        assert.match(older, /^TimeoutStartSec=900$/m);
        assert.equal(unitTextOfServer(declared), unitTextOfServer(older));
        const other = renderUnit({ ...fieldService(), memFractionStatic: 0.85 }, { hasSecrets: true, owner: KPRO5, startupTimeoutSeconds: 120 });
        assert.notEqual(unitTextOfServer(other), unitTextOfServer(declared));
        assert.notEqual(unitTextOfServer(renderUnit(fieldService(), { hasSecrets: false, owner: KPRO5 })), unitTextOfServer(older));
    });

    it("counts a unit with the former header (which carried a config hash) as the same server", () => {
        const now = renderUnit(fieldService(), { hasSecrets: true, owner: KPRO5 });
        const lines = now.split("\n");
        const former = [`${lines[0].replace(/\.$/, "")}. config-hash: sha256:c2ff01c4603f5444`, ...lines.slice(1)].join("\n");
        assert.notEqual(former, now);
        assert.equal(unitTextWithoutOwner(former), unitTextWithoutOwner(now));
    });

    it("reads the same fields back with and without the owner (property)", () => {
        fc.assert(
            fc.property(serviceConfig, fc.boolean(), (svc, hasSecrets) => {
                const owned = serviceFromUnit(renderUnit(svc, { hasSecrets, owner: KPRO5 }));
                const plain = serviceFromUnit(renderUnit(svc, { hasSecrets }));
                assert.deepEqual(owned.fields, plain.fields);
                assert.deepEqual(owned.environment, plain.environment);
            }),
            { numRuns: 100 },
        );
    });
});

describe("systemd unit: escaping", () => {
    it("escapes % and $ in ExecStart, ${SGLANG_API_KEY} too: nothing the stack writes is expanded by systemd", () => {
        assert.equal(escapeExecArg("100%"), "100%%");
        assert.equal(escapeExecArg("$HOME"), "$$HOME");
        assert.equal(escapeExecArg("${SGLANG_API_KEY}"), "$${SGLANG_API_KEY}");
        assert.equal(escapeExecArg("${OTHER}"), "$${OTHER}");
        assert.equal(escapeExecArg("a b"), '"a b"');
        assert.equal(escapeExecArg('say "hi"\n'), '"say \\"hi\\"\\n"');
        assert.equal(escapeExecArg(";"), "\\;");
    });

    it("passes the two characters \\; literally, quoted, and a lone ; as the escaped separator", () => {
        assert.equal(escapeExecArg("\\;"), '"\\\\;"');
        assert.deepEqual(parseExecStart(renderExecStart(["/bin/x", ";", "\\;", "a;b"])), ["/bin/x", ";", "\\;", "a;b"]);
        assert.deepEqual(parseExecStart('/bin/x \\; "\\\\;" "\\;"'), ["/bin/x", ";", "\\;", "\\;"]);
    });

    it("round-trips any argument through ExecStart (property)", () => {
        fc.assert(
            fc.property(fc.array(hostileString, { maxLength: 6 }), (args) => {
                const argv = ["/opt/x/bin/sglang", ...args];
                const unit = parseUnit(`[Service]\nExecStart=${renderExecStart(argv)}\n`);
                assert.deepEqual(parseExecStart(unitValues(unit, "Service", "ExecStart")[0]!), argv);
            }),
            { numRuns: 500 },
        );
    });

    it("round-trips any NAME=value through Environment= quoting (property)", () => {
        fc.assert(
            fc.property(hostileString, (value) => {
                const words = splitWords(quoteWord(escapeSpecifiers(`X=${value}`)));
                assert.deepEqual(words.map(unescapeSpecifiers), [`X=${value}`]);
            }),
            { numRuns: 500 },
        );
    });

    it("reads quotes and C escapes as systemd does", () => {
        assert.deepEqual(splitWords(`a"b c"d 'e f' \\x41 "\\s" x\\qy`), ["ab cd", "e f", "A", " ", "x\\qy"]);
        assert.throws(() => splitWords('"open'), UnitSyntaxError);
    });
});

describe("systemd unit: injection fuzz", () => {
    /**
     * Words of an ExecStart value that systemd would still expand: a `%`
     * specifier or a `$` left after the escaped pairs `%%` and `$$`.
     */
    function expandingWords(execStart: string): string[] {
        return splitWords(execStart).filter((word) => /[%$]/.test(word.replace(/%%/g, "").replace(/\$\$/g, "")));
    }

    it("shows 0 escapes: hostile extraArgs values come back as the same argv elements and no word expands (property)", () => {
        let escapes = 0;
        fc.assert(
            fc.property(hostileExtraArgs, fc.boolean(), (extraArgs, hasSecrets) => {
                const svc = withExtra(extraArgs);
                const text = renderUnit(svc, { hasSecrets });
                const execStart = unitValues(parseUnit(text), "Service", "ExecStart")[0]!;
                const back = serviceFromUnit(text);
                const expanding = expandingWords(execStart);
                const ok =
                    deepEqualJson(back.argv.slice(back.argv.length - extraArgs.length), extraArgs) &&
                    deepEqualJson(back.fields.extraArgs, extraArgs) &&
                    deepEqualJson(expanding, []);
                if (!ok) escapes++;
                assert.ok(ok, `escaped: ${JSON.stringify(extraArgs)}\n${execStart}`);
            }),
            { numRuns: 500 },
        );
        assert.equal(escapes, 0);
    });
});

describe("systemd unit: systemd-analyze verify", function () {
    this.timeout(120000);
    let root: SystemdRoot;
    before(() => {
        root = new SystemdRoot();
    });
    after(() => root.dispose());

    function assertVerifies(svc: ServiceConfig, hasSecrets: boolean): void {
        const result = root.verify(unitName(svc.name), renderUnit(svc, { hasSecrets }), [executableOf(svc)]);
        assert.equal(result.output, "", `systemd-analyze verify complained:\n${result.output}`);
        assert.equal(result.status, 0);
    }

    it("accepts the field unit without a warning", () => {
        assertVerifies(fieldService(), true);
    });

    it("accepts the field unit with its owner line without a warning", () => {
        const svc = fieldService();
        const result = root.verify(unitName(svc.name), renderUnit(svc, { hasSecrets: true, owner: KPRO5 }), [executableOf(svc)]);
        assert.equal(result.output, "");
        assert.equal(result.status, 0);
    });

    it("accepts every generated unit without a warning (property)", () => {
        fc.assert(
            fc.property(serviceConfig, fc.boolean(), (svc, hasSecrets) => assertVerifies(svc, hasSecrets)),
            { numRuns: 40 },
        );
    });

    it("accepts hostile arguments and environment values, escaped", () => {
        fc.assert(
            fc.property(fc.array(hostileString, { minLength: 1, maxLength: 4 }), hostileString, (args, value) => {
                const argv = ["/opt/x/bin/tool", ...args];
                const text = [
                    "[Unit]",
                    "Description=escaping",
                    "[Service]",
                    `Environment=${quoteWord(escapeSpecifiers(`X=${value}`))}`,
                    `ExecStart=${renderExecStart(argv)}`,
                    "",
                ].join("\n");
                const result = root.verify("escaping.service", text, ["/opt/x/bin/tool"]);
                assert.equal(result.output, "", `systemd-analyze verify complained about ${JSON.stringify(args)}:\n${result.output}`);
                assert.equal(result.status, 0);
            }),
            { numRuns: 40 },
        );
    });

    it("accepts units with every shape of extraArgs and environment values with spaces, quotes, % and $", () => {
        for (const extraArgs of ACCEPTED_EXTRA_ARGS) {
            const svc = ServiceSchema.parse({
                ...fieldConfig().service,
                extraArgs,
                environment: { SGLANG_ENABLE_SPEC_V2: "1", A: "two words", B: 'say "hi"', C: "50%", D: "${HOME} $X", E: "a\\b;c" },
            });
            assertVerifies(svc, true);
            assertVerifies(svc, false);
        }
    });

    it("accepts units with hostile extraArgs and environment values the config takes (property)", () => {
        fc.assert(
            fc.property(hostileExtraArgs, configurableText, fc.boolean(), (extraArgs, value, hasSecrets) => {
                const svc = ServiceSchema.parse({ ...fieldConfig().service, extraArgs, environment: { X: value } });
                assertVerifies(svc, hasSecrets);
            }),
            { numRuns: 40 },
        );
    });

    it("is not a rubber stamp: it reports a unit with an unescaped %", () => {
        const text = "[Unit]\nDescription=x\n[Service]\nExecStart=/opt/x/bin/tool 50%x\n";
        const result = root.verify("bad.service", text, ["/opt/x/bin/tool"]);
        assert.notEqual(result.output, "");
    });
});
