#lang racket/base
;; mandelbrot (Computer Language Benchmarks Game task), written for multios (issue #13): the
;; Mandelbrot set on an n×n grid over [-1.5, 0.5] × [-1, 1], 50 iterations, limit 2, written as a
;; binary PBM bitmap. Compute-bound.
(require racket/flonum racket/fixnum)

(define n (string->number (vector-ref (current-command-line-arguments) 0)))
(define out (current-output-port))
(fprintf out "P4\n~a ~a\n" n n)
(define row (make-bytes (quotient (+ n 7) 8)))
(define inv (fl/ 2.0 (fx->fl n)))

(define (inside? cr ci)
  (let loop ([zr 0.0] [zi 0.0] [i 0])
    (cond
      [(fx= i 50) #t]
      [(fl> (fl+ (fl* zr zr) (fl* zi zi)) 4.0) #f]
      [else
       (loop (fl+ (fl- (fl* zr zr) (fl* zi zi)) cr)
             (fl+ (fl* 2.0 (fl* zr zi)) ci)
             (fx+ i 1))])))

(for ([y (in-range n)])
  (define ci (fl- (fl* inv (fx->fl y)) 1.0))
  (bytes-fill! row 0)
  (for ([x (in-range n)])
    (define cr (fl- (fl* inv (fx->fl x)) 1.5))
    (when (inside? cr ci)
      (define b (fxquotient x 8))
      (bytes-set! row b (fxior (bytes-ref row b) (fxrshift 128 (fxremainder x 8))))))
  (write-bytes row out))
(flush-output out)
