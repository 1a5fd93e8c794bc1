import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { remoteCommand, shCommand, shQuote } from "../../core/shell";

/** Runs `script` with sh -c; returns the NUL-separated words printf wrote after the leading marker word. */
function shWords(script: string): string[] {
    const run = spawnSync("sh", ["-c", script], { encoding: "utf8" });
    assert.equal(run.status, 0, `sh failed on ${JSON.stringify(script)}: ${run.stderr}`);
    const words = run.stdout.slice(0, -1).split("\0");
    assert.equal(words[0], "MARK");
    return words.slice(1);
}

/** Anything an argv can hold: shell metacharacters, quotes, newlines, non-ASCII. */
const anyWord = fc
    .string({
        unit: fc.oneof(
            fc.constantFrom(
                " ",
                "\t",
                "\n",
                "'",
                '"',
                "\\",
                "$",
                "`",
                "!",
                "*",
                "?",
                "[",
                "]",
                "~",
                "#",
                "&",
                ";",
                "|",
                "<",
                ">",
                "(",
                ")",
                "{",
                "}",
                "=",
                "%",
                "é",
                "\x01",
            ),
            fc.string({ minLength: 1, maxLength: 1, unit: "grapheme" }),
        ),
        maxLength: 20,
    })
    .filter((s) => !s.includes("\0"));

describe("shell quoting", () => {
    it("leaves plain words bare and single-quotes the rest", () => {
        assert.equal(shQuote("/opt/sglang/venv/bin/sglang"), "/opt/sglang/venv/bin/sglang");
        assert.equal(shQuote("a b"), "'a b'");
        assert.equal(shQuote("it's"), `'it'\\''s'`);
        assert.equal(shQuote(""), "''");
        assert.equal(shQuote("A=1"), "'A=1'");
        assert.equal(shQuote("if"), "'if'");
    });

    it("refuses NUL", () => {
        assert.throws(() => shQuote("a\0b"));
    });

    it("sh -c on shCommand(argv) sees exactly argv (property)", () => {
        fc.assert(
            fc.property(fc.array(anyWord, { maxLength: 6 }), (argv) => {
                assert.deepEqual(shWords(shCommand(["printf", "%s\\0", "MARK", ...argv])), argv);
            }),
            { numRuns: 150 },
        );
    });

    it("keeps a leading NAME=value word a command, not an assignment", () => {
        const run = spawnSync("sh", ["-c", `${shCommand(["A=1"])} 2>&1; echo "rc=$?"`], { encoding: "utf8" });
        assert.match(run.stdout, /rc=127/);
    });
});

describe("remote commands", () => {
    it("sends argv as is on a direct host", () => {
        assert.equal(remoteCommand("direct", undefined, ["systemctl", "is-active", "sglang-qwen.service"]), "systemctl is-active sglang-qwen.service");
    });

    it("goes through pct exec on a Proxmox host, quoted once", () => {
        assert.equal(remoteCommand("pct-exec", 129, ["sh", "-c", "echo $HOME"]), "pct exec 129 -- sh -c 'echo $HOME'");
    });

    it("needs the vmid for pct exec", () => {
        assert.throws(() => remoteCommand("pct-exec", undefined, ["true"]), /vmid/);
    });

    it("hands pct exec exactly argv after one shell parse (property)", () => {
        // A stand-in `pct` that prints what pct exec would run (argv after `--`), like lxc-attach does without a shell.
        const fakePct = `pct() { [ "$1" = exec ] && [ "$2" = 129 ] && [ "$3" = -- ] || exit 9; shift 3; printf '%s\\0' "$@"; }`;
        fc.assert(
            fc.property(fc.array(anyWord, { minLength: 1, maxLength: 5 }), (argv) => {
                assert.deepEqual(shWords(`${fakePct}; ${remoteCommand("pct-exec", 129, ["MARK", ...argv])}`), argv);
            }),
            { numRuns: 100 },
        );
    });
});
