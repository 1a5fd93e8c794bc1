// The floor of `npm run bench`: a Pulumi TypeScript program that declares
// nothing but one output. What `pulumi preview --refresh` costs here is what
// the engine, the language host, node and the SDK cost before any resource:
// the stack cannot be faster than this.
import * as pulumi from "@pulumi/pulumi";

export const stack = pulumi.getStack();
