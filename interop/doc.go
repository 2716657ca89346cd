// Package interop holds Warden's tests against real MCP peers from the npm registry (M4): the
// official TypeScript SDK client against `warden serve`, the reference servers (everything,
// filesystem, memory) as stdio upstreams behind it, and the MCP conformance suite run against
// server-everything directly and through Warden; and Warden deployed as several instances:
// three `warden serve` processes on one PostgreSQL store behind RoundRobin, a proxy with no
// affinity, driven by one TypeScript SDK session (session.mjs) while an instance is killed
// (TestTrio). RoundRobin is exported for the benchmark (bench/), which measures the same
// deployment.
//
// The peers are pinned in package.json and package-lock.json; the tests install them with
// `npm ci` when node_modules is missing. Without node the tests skip, unless
// WARDEN_INTEROP=require (set by .ci/run), which makes a missing node a failure; TestTrio also
// needs WARDEN_TEST_POSTGRES_URL, and under WARDEN_INTEROP=require fails without it.
package interop
