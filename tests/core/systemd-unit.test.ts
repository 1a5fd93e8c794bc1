import assert from "node:assert/strict";
import fc from "fast-check";
import { ServiceConfig, ServiceSchema } from "../../core/config-schema";
import { argvFieldsOf, resolveLauncher, serveExecutable } from "../../core/sglang-args";
import {
    ENVIRONMENT_FILE_MODE,
    environmentFilePath,
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
    serverConfigFilePath,
    serviceFromUnit,
    splitWords,
    unescapeSpecifiers,
    unitName,
    unitOwner,
    unitTextWithoutOwner,
    unitValues,
    UnitSyntaxError,
} from "../../core/systemd-unit";
import { fieldConfig, fieldService, serviceConfig, SystemdRoot } from "./fixtures";

/** What serviceFromUnit should read back from renderUnit(service, { hasSecrets }): the declared fields, environment and files. */
function expectedUnitService(service: ServiceConfig, opts: { hasSecrets: boolean }) {
    return {
        fields: argvFieldsOf(service, opts.hasSecrets ? { configFile: serverConfigFilePath(service.name) } : {}),
        environment: { ...service.environment },
        environmentFiles: opts.hasSecrets ? [environmentFilePath(service.name)] : [],
    };
}

function executableOf(service: ServiceConfig): string {
    return resolveLauncher(service) === "serve" ? serveExecutable(service.python) : service.python;
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
    it("escapes % and $ in ExecStart but leaves the intended ${SGLANG_API_KEY}", () => {
        const refs = new Set(["SGLANG_API_KEY"]);
        assert.equal(escapeExecArg("100%", refs), "100%%");
        assert.equal(escapeExecArg("$HOME", refs), "$$HOME");
        assert.equal(escapeExecArg("${SGLANG_API_KEY}", refs), "${SGLANG_API_KEY}");
        assert.equal(escapeExecArg("${OTHER}", refs), "$${OTHER}");
        assert.equal(escapeExecArg("a b", refs), '"a b"');
        assert.equal(escapeExecArg('say "hi"\n', refs), '"say \\"hi\\"\\n"');
        assert.equal(escapeExecArg(";", refs), "\\;");
    });

    it("round-trips any argument through ExecStart (property)", () => {
        fc.assert(
            fc.property(
                fc.array(
                    hostileString.filter((s) => s !== "\\;"),
                    { maxLength: 6 },
                ),
                (args) => {
                    const argv = ["/opt/x/bin/sglang", ...args];
                    const unit = parseUnit(`[Service]\nExecStart=${renderExecStart(argv)}\n`);
                    assert.deepEqual(parseExecStart(unitValues(unit, "Service", "ExecStart")[0]!), argv);
                },
            ),
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
            fc.property(
                fc.array(
                    hostileString.filter((s) => s !== "\\;"),
                    { minLength: 1, maxLength: 4 },
                ),
                hostileString,
                (args, value) => {
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
                },
            ),
            { numRuns: 40 },
        );
    });

    it("is not a rubber stamp: it reports a unit with an unescaped %", () => {
        const text = "[Unit]\nDescription=x\n[Service]\nExecStart=/opt/x/bin/tool 50%x\n";
        const result = root.verify("bad.service", text, ["/opt/x/bin/tool"]);
        assert.notEqual(result.output, "");
    });
});
