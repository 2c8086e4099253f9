// Package workeragent is the worker side of Splash Fabric: it pulls the
// invocations of its tools from NATS JetStream, deduplicates them through
// the idempotency journal, runs the registered handlers, streams their
// chunks and answers the host.
//
// # Usage
//
// Build an agent on a connection, register tools from their definitions
// (package toolspec: the host registers the same ones, and every call
// carries the definition's digest), and run it until the context ends:
//
//	agent, err := workeragent.New(nc, workeragent.Config{
//		WorkerID: "worker-1",
//		Key:      key,               // the host's session key
//		Fabric:   fabric.Config{},   // must match the host's
//		Journal:  journal,           // idempotency.NewKV(...) in production
//	})
//	remote, err := toolspec.Spec{Name: "text.remote", Idempotent: true}.Compile()
//	err = agent.HandleTool(remote, workeragent.HandlerFunc(
//		func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
//			if err := call.Stream.Write("working"); errors.Is(err, workeragent.ErrStreamLimitExceeded) {
//				// stop streaming; the result still goes out
//			}
//			return workeragent.Result(strings.ToUpper(call.Input.Text)), nil
//		}), workeragent.Concurrency(8))
//	err = agent.Run(ctx) // Ready() is closed once every tool is consuming
//
// A catalog file (toolspec.Load) holds many definitions; a definition
// that says how to run a child process or names an MCP server needs no
// handler (HandleTool with a nil Handler).
//
// Run provisions the fabric's streams and bucket (idempotently, as every
// process that joins the fabric does) and one durable pull consumer per
// tool.
//
// # Outcomes
//
// A handler answers with its return values. A nil error sends the Output
// (Result or JSONResult) as a success. Retryable and RateLimited ask the host
// for another attempt under the same idempotency key (the agent never
// retries on its own); Permanent ends the operation; CancelAcknowledged
// confirms a cancellation request once the effect has stopped. A plain
// error counts as transient.
//
// # What happens to one invocation
//
//  1. The frame is opened with the session key; a forged one is terminated
//     and counted, never run.
//  2. A cancellation recorded before pickup answers acknowledged without
//     running the handler.
//  3. The journal decides whether it runs. For most tools Begin claims the
//     key: Fresh runs; Done replays the stored result (a dedupe hit);
//     RunningElsewhere puts the message back until the other holder's
//     lease would have expired; TakenOver answers indeterminate. A tool
//     declared idempotent takes no claim and runs at once (a redelivery
//     or a later attempt first looks for a stored answer on the
//     operation's answer subject, fabric.AnswerSubject, to replay).
//  4. While the handler runs, the agent reports progress to the stream
//     every HeartbeatInterval and renews a claim's lease. A cancellation
//     request cancels the handler's context for tools declared
//     cancellable and is answered unsupported for the others, whose call
//     runs on.
//  5. A claimed call's terminal result is published to the host's events
//     subject and then stored in the journal (Finish). An Idempotent
//     tool's answer is published to its operation's answer subject and
//     is its only record: the stream keeps the first answer stored there,
//     and a call that finds one stored already answers with it. The
//     invocation is acked when the stream has stored the event, and
//     redelivered (to replay it) if it could not.
//
// # Journal writes per call
//
// A claimed call costs two journal writes (Begin, Finish) and one per
// lease renewal; an Idempotent one costs none, however long it runs (its
// answer is its record). Retryable answers are never stored.
//
// A journal write whose answer is lost may have landed or not. The agent
// never guesses: an unanswered Begin is resumed under the same owner id,
// and an unanswered renewal, Finish or Release reads the record and, while
// it is still this claim's, resumes the claim and writes again. So a lost
// answer neither costs a healthy call its lease nor leaves a key running
// under a claim that has ended.
//
// # Reconciliation
//
// Each tool's reconcile subject is served too, in a queue group, so one
// agent of the pool answers a host's reconciliation request: running (one
// of its calls holds the key, or the journal shows a live lease), the
// stored result (succeeded, failed, cancelled: from the journal, or for
// an Idempotent tool from its answer subject), or unknown. A request that
// fails authentication or names another tool is counted and never
// answered; answering writes nothing.
//
// # Stopping
//
// Stop stops pulling and waits for in-flight calls; StopAndCancel also
// cancels their contexts. Run, when its context ends, does the first for
// DrainGrace and then the second; calls that stop because of the drain are
// released in the journal and handed back to the stream for another agent.
package workeragent
