import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { LabInfo, writeLabStackConfig } from "../../lab/control";
import { lab, testLabDir } from "./lab-fixture";

import * as yaml from "js-yaml";

describe("lab stack config", function () {
    let info: LabInfo;

    before(async function () {
        this.timeout(120_000);
        info = await lab();
    });

    it("writes kpro5's settings with the lab's host, key and container address", () => {
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
        const file = writeLabStackConfig({ labDir: testLabDir(), kpro5File: kpro5, file: path.join(testLabDir(), "Pulumi.lab.yaml") });
        const doc = yaml.load(fs.readFileSync(file, "utf8")) as { encryptionsalt: string; config: Record<string, Record<string, unknown>> };
        assert.equal(doc.encryptionsalt, "v1:c2FsdA==:v1:abc");
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
});
