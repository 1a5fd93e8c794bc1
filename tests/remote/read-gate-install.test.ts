import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { authorizedKeysLine, parsePublicKey, ReadGateOptionError, renderGate, renderInstallScript, renderRemoveKeyScript } from "../../core/read-gate/install";
import { GATE_FILE, runReadGate } from "../../scripts/read-gate";
import { shCommand } from "../../core/shell";
import { gpuFactsScript } from "../../core/box/host-reads";

function keygen(dir: string, name: string): { file: string; pub: string } {
    const file = path.join(dir, name);
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", file], { stdio: "ignore" });
    return { file, pub: fs.readFileSync(`${file}.pub`, "utf8") };
}

describe("read-only gate: the authorized_keys line and the install script", function () {
    this.timeout(20_000);
    let dir: string;
    let key: { file: string; pub: string };
    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-read-gate-install-"));
        key = keygen(dir, "read");
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    const blob = () => key.pub.split(" ")[1]!;

    it("gives the key a forced command and restrict, with the gate's scope and an optional from=", () => {
        assert.equal(
            authorizedKeysLine({ publicKey: key.pub, scope: { vmids: [129] } }),
            `command="/usr/local/sbin/sglang-serve-read-gate --vmid 129",restrict ssh-ed25519 ${blob()} sglang-serve-read`,
        );
        assert.equal(
            authorizedKeysLine({ publicKey: key.pub, scope: { direct: true }, from: "10.1.2.0/24,10.9.9.9", comment: "sglang-serve-read-ct129" }),
            `command="/usr/local/sbin/sglang-serve-read-gate --direct",restrict,from="10.1.2.0/24,10.9.9.9" ssh-ed25519 ${blob()} sglang-serve-read-ct129`,
        );
        assert.match(authorizedKeysLine({ publicKey: key.pub, scope: { vmids: [131, 129, 129] } }), /--vmid 129 --vmid 131"/);
        assert.match(
            authorizedKeysLine({ publicKey: key.pub, scope: { vmids: [129], pythons: ["/opt/v/bin/python3"], models: ["/models/m", "/models/d"] } }),
            /^command="\/usr\/local\/sbin\/sglang-serve-read-gate --vmid 129 --python \/opt\/v\/bin\/python3 --model \/models\/d --model \/models\/m",restrict /,
        );
    });

    it("prints the key's fingerprint as ssh-keygen -l does", () => {
        const expected = execFileSync("ssh-keygen", ["-l", "-E", "sha256", "-f", `${key.file}.pub`], { encoding: "utf8" }).split(/\s+/)[1];
        assert.equal(parsePublicKey(key.pub).fingerprint, expected);
    });

    it("refuses what is not one public key line, a private key, and unsafe paths, vmids or patterns, naming the option", () => {
        const bad: [() => unknown, RegExp][] = [
            [() => parsePublicKey(fs.readFileSync(key.file, "utf8")), /--public-key: that is a private key; give the read-only key's \.pub file/],
            [() => parsePublicKey("hello"), /--public-key: "hello" is not one OpenSSH public key line/],
            [() => parsePublicKey(`${key.pub}\n${key.pub}`), /is not one OpenSSH public key line/],
            [
                () => authorizedKeysLine({ publicKey: key.pub, scope: { vmids: [129] }, gatePath: "/usr/local/sbin/gate --direct" }),
                /--gate-path .* must be an absolute path/,
            ],
            [() => authorizedKeysLine({ publicKey: key.pub, scope: { vmids: [129] }, gatePath: 'x",no-restrict' }), /--gate-path/],
            [() => authorizedKeysLine({ publicKey: key.pub, scope: { vmids: [12] } }), /--vmid 12 is not a Proxmox container id/],
            [() => authorizedKeysLine({ publicKey: key.pub, scope: { vmids: [] } }), /give --vmid <vmid>/],
            [() => authorizedKeysLine({ publicKey: key.pub, scope: { vmids: [129] }, from: '*" command="sh' }), /--from .* must be sshd from= patterns/],
            [
                () => authorizedKeysLine({ publicKey: key.pub, scope: { vmids: [129], pythons: ["/opt/v/bin/python3 --direct"] } }),
                /--python "\/opt\/v\/bin\/python3 --direct" \(service\.python\) must be an absolute path/,
            ],
            [
                () => authorizedKeysLine({ publicKey: key.pub, scope: { direct: true, models: ["/models/../etc"] } }),
                /--model "\/models\/\.\.\/etc" \(service\.model\.path\)/,
            ],
            [
                () => renderInstallScript({ publicKey: key.pub, scope: { vmids: [129] }, gateText: "x\n", authorizedKeys: "keys file" }),
                /--authorized-keys "keys file" must be an absolute path or ~\//,
            ],
        ];
        for (const [f, message] of bad) assert.throws(f, (e: Error) => e instanceof ReadGateOptionError && message.test(e.message));
    });

    it("npm run read-gate: --stack takes the scope and the pins from the stack file (kpro5: --vmid 129, ct129: --direct); usage errors exit 2", () => {
        const kpro5 = runReadGate(["line", "--stack", "kpro5", "--public-key", `${key.file}.pub`]);
        assert.equal(kpro5.code, 0, kpro5.stderr);
        assert.match(
            kpro5.stdout,
            /^command="\/usr\/local\/sbin\/sglang-serve-read-gate --vmid 129 --python \/opt\/sglang\/venv\/bin\/python3 --model \/models\/Qwen3\.6-27B",restrict ssh-ed25519 /,
        );
        const ct129 = runReadGate(["line", "--stack", "ct129", "--public-key", `${key.file}.pub`]);
        assert.match(ct129.stdout, /--direct --python \/opt\/sglang\/venv\/bin\/python3 --model \/models\/Qwen3\.6-27B",restrict /);
        const project = path.join(dir, "project");
        fs.mkdirSync(project, { recursive: true });
        fs.writeFileSync(
            path.join(project, "Pulumi.eagle.yaml"),
            "config:\n  sglang-serve:host:\n    topology: direct\n  sglang-serve:service:\n    python: /opt/v/bin/python3\n    model:\n      path: /models/m\n    speculative:\n      algorithm: EAGLE\n      draftModelPath: /models/drafter\n",
        );
        const eagle = runReadGate(["line", "--stack", "eagle", "--public-key", `${key.file}.pub`], project);
        assert.match(eagle.stdout, /--direct --python \/opt\/v\/bin\/python3 --model \/models\/drafter --model \/models\/m",restrict /);
        // A stack that stages its releases (service.venv): the adopted venvs' pythons and the root, for every release's venv there.
        fs.writeFileSync(
            path.join(project, "Pulumi.staged.yaml"),
            'config:\n  sglang-serve:host:\n    topology: direct\n  sglang-serve:service:\n    sglangVersion: 0.5.23\n    venv:\n      root: /opt/sglang\n      adopt:\n        "0.5.11": /opt/sglang/venv\n    model:\n      path: /models/m\n',
        );
        const staged = runReadGate(["line", "--stack", "staged", "--public-key", `${key.file}.pub`], project);
        assert.match(staged.stdout, /--direct --python \/opt\/sglang\/venv\/bin\/python3 --model \/models\/m --venv-root \/opt\/sglang",restrict /);
        // A stack with boxes: --box picks the host that gets the gate, with the pins of the servers on it.
        fs.writeFileSync(
            path.join(project, "Pulumi.two.yaml"),
            [
                "config:",
                "  sglang-serve:boxes:",
                "    - host: { name: kpro5, topology: pct-exec }",
                "      container: { vmid: 129 }",
                "    - host: { name: kpro6, topology: pct-exec }",
                "      container: { vmid: 130 }",
                "  sglang-serve:servers:",
                "    - { name: a, box: kpro5, python: /opt/a/bin/python3, model: { path: /models/a } }",
                "    - { name: b, box: kpro6, python: /opt/b/bin/python3, model: { path: /models/b } }",
                "    - { name: c, box: kpro6, python: /opt/b/bin/python3, model: { path: /models/c } }",
                "",
            ].join("\n"),
        );
        const kpro6 = runReadGate(["line", "--stack", "two", "--box", "kpro6", "--public-key", `${key.file}.pub`], project);
        assert.equal(kpro6.code, 0, kpro6.stderr);
        assert.match(kpro6.stdout, /--vmid 130 --python \/opt\/b\/bin\/python3 --model \/models\/b --model \/models\/c",restrict /);
        const noBox = runReadGate(["line", "--stack", "two", "--public-key", `${key.file}.pub`], project);
        assert.equal(noBox.code, 2);
        assert.match(noBox.stderr, /declares boxes kpro5, kpro6; give --box <name> for the host that gets this gate/);
        for (const [args, message] of [
            [["line", "--public-key", `${key.file}.pub`], /give exactly one of --stack <name>, --vmid <vmid> \(repeatable\) or --direct/],
            [["line", "--stack", "kpro5", "--box", "kpro6", "--public-key", `${key.file}.pub`], /--box kpro6: .*Pulumi\.kpro5\.yaml declares one box/],
            [["line", "--stack", "nope", "--public-key", `${key.file}.pub`], /--stack nope: no .*Pulumi\.nope\.yaml/],
            [
                ["install-script", "--vmid", "129", "--public-key", path.join(dir, "missing.pub")],
                /--public-key .*missing\.pub: no such file \(make the key with ssh-keygen/,
            ],
            [["install-script", "--vmid", "129"], /give --public-key/],
            [
                ["install-script", "--vmid", "129", "--public-key", `${key.file}.pub`],
                /give --python <service\.python> and --model <service\.model\.path> .* or --stack <name>: the gate pins the box-facts read to them/,
            ],
            [["line", "--stack", "kpro5", "--python", "/x/bin/python3", "--public-key", `${key.file}.pub`], /--stack takes the pins from the stack file/],
            [["frobnicate"], /unknown command "frobnicate"/],
        ] as [string[], RegExp][]) {
            const r = runReadGate(args);
            assert.equal(r.code, 2, args.join(" "));
            assert.match(r.stderr, message);
        }
    });

    it("npm run read-gate -- check says whether the gate allows a command", () => {
        const refused = runReadGate(["check", "--vmid", "129", "systemctl stop sglang-qwen.service"]);
        assert.equal(refused.code, 1);
        assert.match(refused.stderr, /refused "systemctl stop sglang-qwen.service"/);
        const facts = runReadGate(["check", "--direct", shCommand(["sh", "-c", gpuFactsScript("sglang-serve-0123456789abcdef")])]);
        assert.equal(facts.code, 0, facts.stderr);
        assert.match(facts.stdout, /allowed: gpu-facts/);
    });

    function runScript(script: string, env: NodeJS.ProcessEnv = {}): { code: number; stdout: string; stderr: string } {
        const r = spawnSync("sh", [], { input: script, encoding: "utf8", env: { PATH: process.env.PATH, HOME: path.join(dir, "home"), ...env } });
        return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
    }

    it("replaces every line of the same key (an unrestricted one too), keeps the others, and writes through a symlink (Proxmox's /etc/pve/priv)", () => {
        const other = keygen(dir, "other");
        const real = path.join(dir, "pve-priv", "authorized_keys");
        fs.mkdirSync(path.dirname(real), { recursive: true });
        fs.writeFileSync(real, `# cluster keys\n${other.pub}${key.pub}from="1.2.3.4" ${key.pub}`, { mode: 0o600 });
        const link = path.join(dir, "home", ".ssh", "authorized_keys");
        fs.mkdirSync(path.dirname(link), { recursive: true, mode: 0o700 });
        fs.symlinkSync(real, link);
        const gatePath = path.join(dir, "sbin", "sglang-serve-read-gate");
        const r = runScript(renderInstallScript({ publicKey: key.pub, scope: { vmids: [129] }, gatePath, gateText: fs.readFileSync(GATE_FILE, "utf8") }));
        assert.equal(r.code, 0, r.stderr);
        assert.ok(fs.lstatSync(link).isSymbolicLink(), "the link is kept");
        assert.deepEqual(fs.readFileSync(real, "utf8").split("\n"), [
            "# cluster keys",
            other.pub.trim(),
            `command="${gatePath} --vmid 129",restrict ssh-ed25519 ${blob()} sglang-serve-read`,
            "",
        ]);
        assert.equal(fs.readFileSync(gatePath, "utf8"), renderGate(fs.readFileSync(GATE_FILE, "utf8")));
        assert.equal(fs.statSync(real).mode & 0o777, 0o600);

        const removed = runScript(renderRemoveKeyScript({ publicKey: key.pub }));
        assert.equal(removed.code, 0, removed.stderr);
        assert.match(removed.stdout, /key SHA256:\S+ removed from .*pve-priv\/authorized_keys/);
        assert.deepEqual(fs.readFileSync(real, "utf8").split("\n"), ["# cluster keys", other.pub.trim(), ""]);
    });

    it("installs nothing when the gate arrived changed or cannot run", () => {
        const keys = path.join(dir, "keys-unchanged");
        const gatePath = path.join(dir, "sbin2", "sglang-serve-read-gate");
        const script = renderInstallScript({
            publicKey: key.pub,
            scope: { direct: true },
            gatePath,
            authorizedKeys: keys,
            gateText: fs.readFileSync(GATE_FILE, "utf8"),
        });
        const changed = runScript(script.replace('NAME = "sglang-serve-read-gate"', 'NAME = "changed"'));
        assert.equal(changed.code, 1);
        assert.match(changed.stderr, /the gate arrived changed \(its sha256 is not [0-9a-f]{64}\); nothing installed/);
        assert.ok(!fs.existsSync(keys) && !fs.existsSync(gatePath));
        const broken = renderInstallScript({
            publicKey: key.pub,
            scope: { direct: true },
            gatePath,
            authorizedKeys: keys,
            gateText: "#!/usr/bin/python3 -I\nREADS = None  # SGLANG_SERVE_READ_GATE_READS\nraise SystemExit(3)\n",
        });
        const r = runScript(broken);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /the new gate does not run \(see above\); nothing installed/);
        assert.ok(!fs.existsSync(keys) && !fs.existsSync(gatePath));
    });
});
