// Package itest holds the integration tests of Splash Fabric's distributed
// path: a real NATS server, fabric.Provision, a hostloop.Loop over a fabric
// host transport, and worker agents with JetStream KV journals, each
// scenario asserting with an effect counter that lives outside the
// workers. bench_test.go measures the same path end to end beside two raw
// JetStream baselines.
package itest
