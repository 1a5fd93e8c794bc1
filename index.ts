import * as pulumi from "@pulumi/pulumi";
class Probe extends pulumi.ComponentResource { constructor(n: string) { super("sglang-serve:index:Probe", n, {}, {}); this.registerOutputs({}); } }
new Probe("x");
export const hello = "world";
