// The parts of @pulumi/pulumi the program uses, taken from the SDK's own
// modules. The package's index also loads the Automation API, ~0.3 s on every
// engine run, which a Pulumi program never uses. Same module instances as the
// index (Node caches by file), so mocks and `instanceof` behave the same.
export { ComponentResource, CustomResource, Resource } from "@pulumi/pulumi/resource";
export type { ComponentResourceOptions, CustomResourceOptions } from "@pulumi/pulumi/resource";
export { Output, interpolate, output, secret } from "@pulumi/pulumi/output";
export type { Input, Inputs } from "@pulumi/pulumi/output";
export { Config } from "@pulumi/pulumi/config";
export { RunError } from "@pulumi/pulumi/errors";
export { getConfig } from "@pulumi/pulumi/runtime/config";
export { getProject, getStack } from "@pulumi/pulumi/metadata";
export * as log from "@pulumi/pulumi/log";
