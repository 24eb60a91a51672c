#lang racket/base
;; fannkuch-redux (Computer Language Benchmarks Game task), written for multios (issue #13):
;; for every permutation of 1..n, count the prefix reversals until 1 is first; print the
;; alternating checksum and the maximum.
(require racket/fixnum)

(define (fannkuch n)
  (define perm1 (build-vector n values))
  (define perm (make-vector n 0))
  (define count (make-vector n 0))
  (let loop ([r n] [perm-count 0] [checksum 0] [max-flips 0])
    (let fill ([r r])
      (when (fx> r 1)
        (vector-set! count (fx- r 1) r)
        (fill (fx- r 1))))
    (vector-copy! perm 0 perm1)
    (define flips
      (let flip ([k (vector-ref perm 0)] [flips 0])
        (if (fx= k 0)
            flips
            (begin
              (let rev ([i 0] [j k])
                (when (fx< i j)
                  (define t (vector-ref perm i))
                  (vector-set! perm i (vector-ref perm j))
                  (vector-set! perm j t)
                  (rev (fx+ i 1) (fx- j 1))))
              (flip (vector-ref perm 0) (fx+ flips 1))))))
    (define max2 (if (fx> flips max-flips) flips max-flips))
    (define sum2 (if (even? perm-count) (+ checksum flips) (- checksum flips)))
    ;; The next permutation: rotate the first r+1 elements until a counter is left.
    (let next ([r 1])
      (if (fx= r n)
          (values sum2 max2)
          (let ([p0 (vector-ref perm1 0)])
            (for ([i (in-range r)])
              (vector-set! perm1 i (vector-ref perm1 (fx+ i 1))))
            (vector-set! perm1 r p0)
            (vector-set! count r (fx- (vector-ref count r) 1))
            (if (fx> (vector-ref count r) 0)
                (loop r (fx+ perm-count 1) sum2 max2)
                (next (fx+ r 1))))))))

(define n (string->number (vector-ref (current-command-line-arguments) 0)))
(define-values (checksum max-flips) (fannkuch n))
(printf "~a\nPfannkuchen(~a) = ~a\n" checksum n max-flips)
