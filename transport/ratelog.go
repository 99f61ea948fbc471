package transport

import "time"

// refusalLogEvery is how often a kind of refusal (a connection over the
// cap, a body over the memory budget) is logged at most.
const refusalLogEvery = 10 * time.Second
