import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { LabInfo, writeLabStackConfig } from "../../lab/control";
import { Deployment, expectExit } from "../../lab/deployment";
import { lab, testLabDir } from "./lab-fixture";
import { labRunEnvironment } from "../../lab/stack";

import * as yaml from "js-yaml";

const repo = path.join(__dirname, "..", "..");

type StackDoc = { encryptionsalt?: string; config: Record<string, Record<string, unknown>> };
const readDoc = (file: string) => yaml.load(fs.readFileSync(file, "utf8")) as StackDoc;

describe("lab stack config", function () {
    let info: LabInfo;

    before(async function () {
        this.timeout(120_000);
        info = await lab();
    });

    /** A kpro5 stack file with a salt and secrets, as `config set --secret` leaves it. */
    function kpro5WithSecrets(): string {
        const kpro5 = path.join(testLabDir(), "Pulumi.kpro5.yaml");
        fs.writeFileSync(
            kpro5,
            [
                "encryptionsalt: v1:c2FsdA==:v1:abc",
                "config:",
                "  sglang-serve:host:",
                "    name: kpro5",
                "    address: 10.1.2.5",
                "    hostKey: ssh-ed25519 AAAAfieldkey",
                "    topology: pct-exec",
                "    gpus: { count: 2, name: NVIDIA RTX A6000, memoryMiB: 49140 }",
                "  sglang-serve:sshPrivateKey:",
                "    secure: v1:field-secret",
                "  sglang-serve:apiKey:",
                "    secure: v1:field-api-key",
                "  sglang-serve:service:",
                "    name: qwen",
                "    port: 30000",
                "    listenHost: 0.0.0.0",
                "    endpointHost: 10.1.230.172",
                "    memFractionStatic: 0.88",
                "    environment: { SGLANG_ENABLE_SPEC_V2: '1' }",
                "  sglang-serve:readiness:",
                "    startupTimeoutSeconds: 900",
                "",
            ].join("\n"),
        );
        return kpro5;
    }

    it("writes kpro5's settings with the lab's host, key and container address, and none of kpro5's salt or secrets", () => {
        const labFile = path.join(testLabDir(), "Pulumi.lab.yaml");
        fs.rmSync(labFile, { force: true });
        const file = writeLabStackConfig({ labDir: testLabDir(), kpro5File: kpro5WithSecrets(), file: labFile });
        const doc = readDoc(file);
        // kpro5's salt and ciphertexts belong to kpro5: the lab stack makes its own (issue 22).
        assert.equal(doc.encryptionsalt, undefined);
        const c = doc.config;
        assert.deepEqual(c["sglang-serve:host"], {
            name: "kpro5",
            address: info.host.address,
            port: info.host.sshPort,
            user: "root",
            hostKey: info.host.hostKey,
            topology: "pct-exec",
            sshPrivateKeyPath: info.clientKeyPath,
            gpus: { count: 2, name: "NVIDIA RTX A6000", memoryMiB: 49140 },
        });
        assert.equal(c["sglang-serve:sshPrivateKey"], undefined);
        assert.equal(c["sglang-serve:apiKey"], undefined);
        assert.deepEqual(c["sglang-serve:service"], {
            name: "qwen",
            port: 30000,
            listenHost: info.container.address,
            endpointHost: info.container.address,
            memFractionStatic: 0.88,
            environment: { SGLANG_ENABLE_SPEC_V2: "1" },
        });
        assert.deepEqual(c["sglang-serve:readiness"], { startupTimeoutSeconds: 900 });
        assert.equal((c["sglang-serve:container"] as { vmid: number }).vmid, 129);
    });

    it("keeps the lab stack's own salt and API key when it writes the file again", () => {
        const labFile = path.join(testLabDir(), "Pulumi.lab.yaml");
        fs.writeFileSync(labFile, "encryptionsalt: v1:bGFi:v1:lab\nconfig:\n  sglang-serve:apiKey:\n    secure: v1:lab-api-key\n");
        writeLabStackConfig({ labDir: testLabDir(), kpro5File: kpro5WithSecrets(), file: labFile });
        const doc = readDoc(labFile);
        assert.equal(doc.encryptionsalt, "v1:bGFi:v1:lab");
        assert.deepEqual(doc.config["sglang-serve:apiKey"], { secure: "v1:lab-api-key" });
        assert.equal(doc.config["sglang-serve:service"].memFractionStatic, 0.88);
    });

    it("mends a lab file written before the fix, which holds kpro5's salt and then its own: the lab's own is kept", () => {
        const labFile = path.join(testLabDir(), "Pulumi.lab.yaml");
        fs.writeFileSync(
            labFile,
            "encryptionsalt: v1:c2FsdA==:v1:abc\nencryptionsalt: v1:bGFi:v1:lab\nconfig:\n  sglang-serve:apiKey:\n    secure: v1:lab-api-key\n",
        );
        writeLabStackConfig({ labDir: testLabDir(), kpro5File: kpro5WithSecrets(), file: labFile });
        const text = fs.readFileSync(labFile, "utf8");
        assert.equal(text.match(/^encryptionsalt:/gm)?.length, 1, text);
        assert.equal(readDoc(labFile).encryptionsalt, "v1:bGFi:v1:lab");
    });

    it("after kpro5's stack file got a salt and a secret (a key set the way older versions said), `npm run lab`'s stack keeps its own salt, holds no secret, and the engine loads its config", async function () {
        this.timeout(240_000);
        const labKey = "lab-api-key-0123456789abcdef0123";
        const kpro5 = await Deployment.create("kpro5", {});
        try {
            // A checkout's kpro5 file as committed, then the step older versions' README gave
            // (`config set --secret sglang-serve:apiKey --stack kpro5`, the value on stdin): the file gets kpro5's salt.
            // (Committed: without the salt a kpro5 stack made in this checkout wrote, under this checkout's passphrase.)
            const kpro5File = path.join(kpro5.dir, "Pulumi.kpro5.yaml");
            const committed = fs.readFileSync(path.join(repo, "Pulumi.kpro5.yaml"), "utf8").replace(/^encryptionsalt:.*\n/m, "");
            fs.writeFileSync(kpro5File, committed);
            await kpro5.setSecret("sglang-serve:apiKey", "kpro5-field-api-key-0123456789abcdef");
            const kpro5Salt = readDoc(kpro5File).encryptionsalt;
            assert.ok(kpro5Salt, "config set --secret writes a salt into Pulumi.kpro5.yaml");

            // What `npm run lab` does (scripts/lab-run.ts): write the stack file, deploy with the lab's key in the
            // run's environment (SGLANG_SERVE_API_KEY); the next `npm run lab` writes the file again.
            const lab = kpro5.otherStack("lab");
            const labFile = path.join(kpro5.dir, "Pulumi.lab.yaml");
            writeLabStackConfig({ labDir: testLabDir(), kpro5File, file: labFile });
            lab.giveApiKey(labKey);
            const preview = await lab.preview();
            expectExit(preview, 0, "preview --stack lab");
            assert.match(preview.stdout, /sglang-serve:index:SglangService/);
            writeLabStackConfig({ labDir: testLabDir(), kpro5File, file: labFile });

            const text = fs.readFileSync(labFile, "utf8");
            assert.equal(text.match(/^encryptionsalt:/gm)?.length ?? 0, readDoc(labFile).encryptionsalt ? 1 : 0, text);
            assert.notEqual(readDoc(labFile).encryptionsalt, kpro5Salt);
            assert.doesNotMatch(text, /secure:/, "the lab's stack file holds a secret");
            expectExit(await lab.preview(), 0, "preview --stack lab after the file was written again");
        } finally {
            kpro5.cleanup();
        }
    });

    it("`npm run lab` deploys on the checkout's own backend and passphrase whatever the operator's shell exports for the field stacks, with the lab's key", () => {
        const shell = {
            PATH: "/usr/bin",
            PULUMI_BACKEND_URL: "s3://team-state",
            PULUMI_CONFIG_PASSPHRASE: "team passphrase",
            PULUMI_CONFIG_PASSPHRASE_FILE: "/home/op/.passphrase",
            SGLANG_SERVE_API_KEY: "field-api-key-0123456789abcdef0123",
        };
        assert.deepEqual(labRunEnvironment(shell, "lab-api-key-0123456789abcdef0123"), {
            PATH: "/usr/bin",
            SGLANG_SERVE_API_KEY: "lab-api-key-0123456789abcdef0123",
        });
    });
});
