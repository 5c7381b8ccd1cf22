package framework

import "context"

// Run starts a blocking runnable (a cache, say) in a goroutine, and returns
// the function that stops it and waits until it returned: a spec passes it
// to DeferCleanup.
func Run(start func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = start(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
