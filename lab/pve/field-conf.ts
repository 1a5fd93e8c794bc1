// Container 129 as it stands in the field before the stack touches it
// (docs/design.md, field notes): 2 GPUs passed through, hostname llm-two.
import { emptyConf, NvidiaDevice, PctConf, passthroughEntries } from "./pct-conf";

export function fieldContainerConf(vmid: number, hostname: string, devices: NvidiaDevice[]): PctConf {
    const conf = emptyConf();
    const o = conf.options;
    o.set("arch", "amd64");
    o.set("cores", "32");
    o.set("features", "nesting=1");
    o.set("hostname", hostname);
    o.set("memory", "131072");
    o.set("net0", "name=eth0,bridge=vmbr0,firewall=1,gw=10.1.230.1,hwaddr=BC:24:11:5E:12:9A,ip=10.1.230.172/24,type=veth");
    o.set("onboot", "1");
    o.set("ostype", "debian");
    o.set("rootfs", `local-lvm:vm-${vmid}-disk-0,size=200G`);
    o.set("swap", "0");
    conf.lxc = passthroughEntries(devices);
    return conf;
}
