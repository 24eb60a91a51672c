// Goroutines making system calls on small stacks, in a cgo program (threads from pthread_create).
package main

// int twice(int x) { return 2 * x; }
import "C"

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func deep(n int, f func()) int {
	var pad [64]byte
	if n == 0 {
		f()
		return int(pad[0])
	}
	return deep(n-1, f) + int(pad[n%64])
}

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	total := 0
	for round := 0; round < 6; round++ {
		var wg sync.WaitGroup
		res := make([]int, 64)
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				deep(i%16, func() {
					for k := 0; k < 20; k++ {
						res[i] += syscall.Getppid() * 0
						st, err := os.Stat("/")
						if err == nil && st.IsDir() {
							res[i]++
						}
						time.Sleep(50 * time.Microsecond)
					}
				})
			}(i)
		}
		wg.Wait()
		for _, v := range res {
			total += v
		}
		if err := exec.Command("true").Run(); err != nil {
			fmt.Println("exec", err)
		}
		syscall.Kill(os.Getpid(), syscall.SIGUSR1)
		<-sig
	}
	fmt.Println("stats", total, "cgo", C.twice(21))
}
