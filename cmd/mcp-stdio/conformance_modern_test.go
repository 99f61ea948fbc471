package main_test

import "fmt"

// Serve's 2026-07-28 face under the suite's server scenarios (issue 12):
// the suite speaks 2026-07-28 to serve, which passes it to a pooled stdio
// child of either kind.

// confModernSpec is the revision of these runs.
const confModernSpec = "2026-07-28"

// confModernServerRuns are the children serve publishes at 2026-07-28.
var confModernServerRuns = []struct {
	child   string // how the report names the kind of child
	why     string // what the run shows, for the report
	fixture func(*confBins) confFixture
	// failing names the scenarios that cannot pass with this child by
	// construction, with the reason (see confLegacyChildFailing).
	failing map[string]string
}{
	{
		child:   "dual-era",
		why:     "The go-sdk v1.8.0 conformance server speaks 2026-07-28 itself on stdio: serve probes it, finds it dual-era, and passes the suite's requests through with their ids remapped",
		fixture: func(b *confBins) confFixture { return b.fixture },
	},
	{
		child: "legacy-only",
		why: "The same conformance server of go-sdk v1.6.1, which predates 2026-07-28 (it answers server/discover and every request before initialize with an error): " +
			"serve does the handshake, synthesises server/discover, strips and stamps, serves subscriptions/listen and turns the child's own requests into input_required results",
		fixture: func(b *confBins) confFixture { return b.legacyFixture },
		failing: confLegacyChildFailing,
	},
}

// confLegacyChildFailing names the 2026-07-28 server scenarios that cannot
// pass with the legacy-only child by construction, and why: they are run
// and recorded, not scored. Known before any run: the go-sdk v1.6.1
// conformance server lacks the tools and the prompt these scenarios call
// (they came with go-sdk's 2026-07-28 support). Add a scenario here only
// with a reason that holds for any gateway in front of this child, once a
// run has shown it; a failure serve could avoid stays a failure.
var confLegacyChildFailing = func() map[string]string {
	m := map[string]string{}
	for name, tool := range map[string]string{
		"input-required-result-basic-elicitation":       "test_input_required_result_elicitation",
		"input-required-result-basic-sampling":          "test_input_required_result_sampling",
		"input-required-result-basic-list-roots":        "test_input_required_result_list_roots",
		"input-required-result-request-state":           "test_input_required_result_request_state",
		"input-required-result-multiple-input-requests": "test_input_required_result_multiple_inputs",
		"input-required-result-multi-round":             "test_input_required_result_multi_round",
		"input-required-result-missing-input-response":  "test_input_required_result_elicitation",
		"input-required-result-result-type":             "test_input_required_result_elicitation",
		"input-required-result-tampered-state":          "test_input_required_result_tampered_state",
		"input-required-result-capability-check":        "test_input_required_result_capabilities",
		"input-required-result-ignore-extra-params":     "test_input_required_result_elicitation",
		"input-required-result-validate-input":          "test_input_required_result_elicitation",
	} {
		m[name] = fmt.Sprintf("the go-sdk v1.6.1 conformance server has no tool %s, which the scenario calls", tool)
	}
	m["input-required-result-non-tool-request"] = "the go-sdk v1.6.1 conformance server has no prompt test_input_required_result_prompt, which the scenario gets"
	return m
}()
