import * as assert from "node:assert/strict";
import { PROVIDER_VERSION } from "../../components/dynamic-provider";
import { readinessCheckProvider } from "../../providers/readiness-check";
import type { ReadinessOutputs } from "../../providers/readiness-check-props";
import { containerNotRunning } from "../../remote/remote-host";
import { CONTAINER_CONF, declaredService, ProviderBox, readinessSettings, serviceInputs } from "./provider-box";

// Issue 13's "container stopped before up" at the provider seam: the refresh of
// the ReadinessCheck reads /server_info through `pct exec`, which a stopped
// container refuses; that is drift to show (and `up` to repair), not a failed refresh.

type Outputs = ReadinessOutputs;

describe("a stopped container at the provider seam", function () {
    this.timeout(30_000);
    let box: ProviderBox;
    let provider: ReturnType<typeof readinessCheckProvider>;

    beforeEach(async () => {
        box = await ProviderBox.open();
        provider = readinessCheckProvider(box.run);
        box.write("etc/pve/lxc/129.conf", CONTAINER_CONF, 0o640);
    });
    afterEach(async () => {
        await box.close();
    });

    it("the ReadinessCheck's refresh records no live args instead of failing", async () => {
        const service = serviceInputs(box, declaredService(box));
        await box.install(service.unitName, service.unitText, service.environmentFile, service.serverConfigFile);
        const inputs = {
            providerVersion: PROVIDER_VERSION,
            connection: service.connection,
            unitName: service.unitName,
            endpoint: service.endpoint,
            revision: "rev-container-stopped",
            requireApiKey: true,
            servedModelName: service.servedModelName,
            speculativeAlgorithm: service.speculativeAlgorithm,
            readiness: readinessSettings(),
        };
        const { outs } = await provider.create(inputs);
        box.containerStatus(129, "stopped");
        const read = await provider.read!("ready", outs as Outputs);
        assert.equal(read.id, "ready");
        assert.equal(read.props!.liveServerArgs, null);
        assert.equal(read.props!.speculativeActive, null);
    });

    it("knows pve-container's refusal of pct exec into a stopped container, and only that", () => {
        assert.equal(
            containerNotRunning(new Error("ssh root@10.1.2.5:22: command failed with exit code 255: pct exec 129 -- sh -c ...\ncontainer '129' not running!")),
            true,
        );
        assert.equal(containerNotRunning(new Error("ssh root@10.1.2.5:22: command failed with exit code 1: pct exec 129 -- systemctl start x")), false);
        assert.equal(containerNotRunning("container '129' not running!"), false);
    });
});
