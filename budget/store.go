// Package budget holds calls to money (G2) and runs to their limits (G3): allowances per run
// and per day for connectors that bill, reserved before a call and settled after; a run's
// model dollar budget and turns; concurrent runs per profile; a tenant's monthly model cap,
// shared with person chat.
//
// The arithmetic that must not race lives in the Store: a reservation is one atomic step that
// either fits the run's per-run figure or reserves nothing, and a run's start is one atomic
// check of the per-day figure and the concurrency limit. Nothing is ever spent above a limit,
// however many calls race, on one instance or several.
package budget

import (
	"context"
	"errors"
	"time"
)

// Allowance is what a run may spend on one billing connector, in the connector's unit.
type Allowance struct {
	Connector string
	Unit      string
	PerRun    float64
	PerDay    float64
}

// Run is one unattended run (a coworker's, a specialist's, a goal step), with its limits.
type Run struct {
	ID      string
	Tenant  string
	Profile string
	Session string
	Attempt int
	Started time.Time
	// Day is the UTC day ("2006-01-02") the run counts against for per-day allowances.
	Day string
	// Ended is zero while the run is live.
	Ended      time.Time
	Allowances []Allowance
	// MaxConcurrent is how many live runs the profile may have in the tenant, this one
	// included (0: no limit).
	MaxConcurrent int
	// BudgetUsd is the run's model dollar budget (0: none); MaxTurns its turns (0: none).
	BudgetUsd float64
	MaxTurns  int
	// DailyBudgetUsd caps the model dollars of the profile's runs in the tenant on Day (0:
	// none); the gate checks it (DaySpend), failing closed when the spend cannot be read.
	DailyBudgetUsd float64
	// Instance is the process (instance.Instance) that holds the run; "" for a run started by
	// an embedder without one, which recovery never ends.
	Instance string
	// Shared: the run belongs to a session kept in the store, which any instance may serve.
	// It carries no instance, so that the death of the one that started it does not end it;
	// it ends with its session (ended, or expired by whichever instance finds it idle).
	Shared bool
}

// ReservationState is where a reservation is in its life.
type ReservationState string

// The states of a reservation.
const (
	Reserved ReservationState = "reserved"
	Settled  ReservationState = "settled"
	Released ReservationState = "released"
)

// Reservation is money or credits held for one call.
type Reservation struct {
	ID        string
	Run       string
	Connector string
	// Call is the id of the call the reservation is for (the call_id of its audit events):
	// recovery looks there for the call's decision to run. "" on reservations made before
	// Warden recorded it, which recovery settles.
	Call string
	// Amount is what was reserved; Actual what was settled.
	Amount  float64
	Actual  float64
	State   ReservationState
	Created time.Time
	Done    time.Time
}

// Spent is a run's spending on one connector.
type Spent struct {
	Connector string
	Unit      string
	PerRun    float64
	PerDay    float64
	Reserved  float64
	Settled   float64
}

// RunStatus is a run and what it has used.
type RunStatus struct {
	Run      Run
	Spent    []Spent
	Turns    int
	ModelUsd float64
}

// Errors the Store returns; callers match them with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	// ErrRunAllowance: the reservation would take the run above its per-run figure; nothing
	// was reserved.
	ErrRunAllowance = errors.New("the run's allowance would be exceeded")
	// ErrDayAllowance: starting the run could take the tenant above a per-day figure.
	ErrDayAllowance = errors.New("the day's allowance would be exceeded")
	// ErrConcurrentRuns: the profile already has as many live runs as it may.
	ErrConcurrentRuns = errors.New("the profile has as many live runs as it may")
	// ErrMonthlyCap: the tenant's model spend this month has reached its cap.
	ErrMonthlyCap = errors.New("the tenant's monthly model cap is reached")
	// ErrRunEnded: the run has ended (or was never started).
	ErrRunEnded = errors.New("the run is not live")
	// ErrTurns: the run has used all its turns.
	ErrTurns = errors.New("the run has no turns left")
	// ErrNotReserved: the reservation was already settled or released.
	ErrNotReserved = errors.New("the reservation is already settled or released")
	// ErrInvalid: a negative or non-finite amount, or an allowance whose per-run figure is
	// above its per-day figure.
	ErrInvalid = errors.New("invalid amount")
)

// Store is the ledger. Implementations are safe for concurrent use, and the steps documented as
// atomic are atomic across every instance sharing the store.
type Store interface {
	// StartRun records a live run (its ID set by the caller). Atomically with every other
	// StartRun, it is refused with ErrDayAllowance when, for one of its allowances, the tenant's
	// runs of the same day on that connector (ended runs at what they recorded: settled plus any
	// reservation still open, nothing if they recorded nothing; live runs at their whole per-run
	// figure, which they may yet spend) plus this run's per-run figure exceed this run's per-day
	// figure; with ErrConcurrentRuns when the profile already has MaxConcurrent live runs in the
	// tenant; and with ErrMonthlyCap when monthlyCapUsd > 0 and the tenant's model spend in month
	// ("2006-01") has reached it.
	StartRun(ctx context.Context, r *Run, monthlyCapUsd float64, month string) error
	// EndRun marks a run ended; ErrRunEnded if it was not live.
	EndRun(ctx context.Context, id string, at time.Time) error
	// RunStatus returns a run and what it has used; ErrNotFound.
	RunStatus(ctx context.Context, id string) (*RunStatus, error)

	// Reserve holds Amount for a call, atomically: only if the run is live, the connector is one
	// of its allowances, and reserved + settled + Amount stays within the per-run figure;
	// otherwise nothing is reserved (ErrRunEnded, ErrRunAllowance, ErrInvalid).
	Reserve(ctx context.Context, r *Reservation) error
	// Settle records what a reserved call actually cost (which may differ from the amount
	// reserved); ErrNotReserved if it was settled or released already.
	Settle(ctx context.Context, id string, actual float64, at time.Time) error
	// Release gives a reservation back (the call did not run); ErrNotReserved likewise.
	Release(ctx context.Context, id string, at time.Time) error
	// RecoverReservations settles, at the amount reserved, every reservation still open that
	// was made before the given time, whoever holds it, and returns how many it settled.
	// warden serve no longer calls it: instance.Store.Recover frees only what dead instances
	// held, and releases the reservations of calls that never had a decision to run.
	RecoverReservations(ctx context.Context, before, at time.Time) (int, error)

	// Turn counts one more model turn; ErrTurns (and no count) when the run has MaxTurns
	// already; ErrRunEnded.
	Turn(ctx context.Context, runID string) (int, error)
	// ModelSpend records model dollars for a tenant's month and, when runID is not empty, for
	// the run. It records them whatever the limits (the money was spent) and returns the run's
	// and the month's totals.
	ModelSpend(ctx context.Context, tenant, runID string, usd float64, month string) (runUsd, monthUsd float64, err error)
	// MonthSpend returns a tenant's model dollars in a month.
	MonthSpend(ctx context.Context, tenant, month string) (float64, error)
	// DaySpend returns the model dollars of a profile's runs in a tenant on a UTC day
	// ("2006-01-02"), live runs included.
	DaySpend(ctx context.Context, tenant, profile, day string) (float64, error)
}
