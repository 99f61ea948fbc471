package frame

import (
	"errors"
	"sync/atomic"
)

// BudgetMin is the size from which a buffer holding a message is counted
// against a [Budget]. Smaller ones are not: they are bounded by how many
// are held at once (one per connection or per reader) rather than by their
// bytes, and leaving them out keeps the common case to plain reads.
const BudgetMin = 64 << 10

// ErrOverBudget means a message was refused because holding it would take
// the bytes held against a [Budget] beyond its limit. Unlike [ErrTooLarge]
// it says nothing about the message itself: the same message may pass once
// others have been let go.
var ErrOverBudget = errors.New("over the gateway's memory budget for messages")

// Budget is an allowance of bytes for large message buffers, shared by
// every reader and writer it is given to: a bound on what a whole process
// holds at once, where a size cap bounds one message.
//
// Counting is by convention. Whoever allocates a buffer of [BudgetMin]
// bytes or more for a message acquires its size first ([Budget.Acquire],
// which refuses beyond the limit, so that nothing is allocated) and
// releases it ([Budget.Release]) once the message has been written on or
// dropped. Bytes already in memory that change hands are counted with
// [Budget.Add], which never refuses: whoever holds them counts them, and
// the next acquisition sees the total.
//
// A Budget is safe for concurrent use. A nil *Budget has no limit and
// counts nothing.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// Acquire counts n more bytes and reports true, or reports false and
// counts nothing when that would take the total beyond the limit.
func (b *Budget) Acquire(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Add counts n more bytes, whatever the total: bytes already held that
// are now counted by a new holder.
func (b *Budget) Add(n int64) {
	if b != nil && n > 0 {
		b.used.Add(n)
	}
}

// Release stops counting n bytes acquired or added before.
func (b *Budget) Release(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
}

// Used returns the bytes counted now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Limit returns the budget's limit; 0 for a nil Budget, which has none.
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}
