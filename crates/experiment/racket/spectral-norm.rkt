#lang racket/base
;; spectral-norm (Computer Language Benchmarks Game task), written for multios (issue #13): the
;; spectral norm of the infinite matrix A(i,j) = 1/((i+j)(i+j+1)/2 + i + 1) truncated to n×n, by
;; ten power iterations of AᵀA. Compute-bound.
(require racket/flonum racket/fixnum)

(define (a i j)
  (fl/ 1.0 (fx->fl (fx+ (fxquotient (fx* (fx+ i j) (fx+ (fx+ i j) 1)) 2) (fx+ i 1)))))

(define (mul-av n v out)
  (for ([i (in-range n)])
    (flvector-set! out i (for/fold ([s 0.0]) ([j (in-range n)]) (fl+ s (fl* (a i j) (flvector-ref v j)))))))

(define (mul-atv n v out)
  (for ([i (in-range n)])
    (flvector-set! out i (for/fold ([s 0.0]) ([j (in-range n)]) (fl+ s (fl* (a j i) (flvector-ref v j)))))))

(define (mul-atav n v out tmp)
  (mul-av n v tmp)
  (mul-atv n tmp out))

(define n (string->number (vector-ref (current-command-line-arguments) 0)))
(define u (make-flvector n 1.0))
(define v (make-flvector n 0.0))
(define tmp (make-flvector n 0.0))
(for ([_ (in-range 10)])
  (mul-atav n u v tmp)
  (mul-atav n v u tmp))
(define-values (vbv vv)
  (for/fold ([vbv 0.0] [vv 0.0]) ([i (in-range n)])
    (values (fl+ vbv (fl* (flvector-ref u i) (flvector-ref v i)))
            (fl+ vv (fl* (flvector-ref v i) (flvector-ref v i))))))
(printf "~a\n" (real->decimal-string (flsqrt (fl/ vbv vv)) 9))
