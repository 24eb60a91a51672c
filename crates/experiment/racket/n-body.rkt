#lang racket/base
;; n-body (Computer Language Benchmarks Game task), written for multios (issue #13): the Jovian
;; planets' orbits, symplectic integrator with dt = 0.01; the energy before and after n steps.
(require racket/flonum)

(define pi 3.141592653589793)
(define solar-mass (* 4.0 pi pi))
(define days-per-year 365.24)

;; x y z vx vy vz mass
(define (body x y z vx vy vz m)
  (flvector x y z (* vx days-per-year) (* vy days-per-year) (* vz days-per-year) (* m solar-mass)))

(define bodies
  (vector
   (body 0.0 0.0 0.0 0.0 0.0 0.0 1.0)
   (body 4.84143144246472090e+00 -1.16032004402742839e+00 -1.03622044471123109e-01
         1.66007664274403694e-03 7.69901118419740425e-03 -6.90460016972063023e-05
         9.54791938424326609e-04)
   (body 8.34336671824457987e+00 4.12479856412430479e+00 -4.03523417114321381e-01
         -2.76742510726862411e-03 4.99852801234917238e-03 2.30417297573763929e-05
         2.85885980666130812e-04)
   (body 1.28943695621391310e+01 -1.51111514016986312e+01 -2.23307578892655734e-01
         2.96460137564761618e-03 2.37847173959480950e-03 -2.96589568540237556e-05
         4.36624404335156298e-05)
   (body 1.53796971148509165e+01 -2.59193146099879641e+01 1.79258772950371181e-01
         2.68067772490389322e-03 1.62824170038242295e-03 -9.51592254519715870e-05
         5.15138902046611451e-05)))

(define nb (vector-length bodies))
(define (ref b k) (flvector-ref (vector-ref bodies b) k))
(define (set b k v) (flvector-set! (vector-ref bodies b) k v))

(define (offset-momentum!)
  (define-values (px py pz)
    (for/fold ([px 0.0] [py 0.0] [pz 0.0]) ([i (in-range nb)])
      (define m (ref i 6))
      (values (fl+ px (fl* (ref i 3) m)) (fl+ py (fl* (ref i 4) m)) (fl+ pz (fl* (ref i 5) m)))))
  (set 0 3 (fl/ (fl- 0.0 px) solar-mass))
  (set 0 4 (fl/ (fl- 0.0 py) solar-mass))
  (set 0 5 (fl/ (fl- 0.0 pz) solar-mass)))

(define (energy)
  (for/fold ([e 0.0]) ([i (in-range nb)])
    (define m (ref i 6))
    (define v2 (fl+ (fl* (ref i 3) (ref i 3)) (fl+ (fl* (ref i 4) (ref i 4)) (fl* (ref i 5) (ref i 5)))))
    (for/fold ([e (fl+ e (fl* 0.5 (fl* m v2)))]) ([j (in-range (+ i 1) nb)])
      (define dx (fl- (ref i 0) (ref j 0)))
      (define dy (fl- (ref i 1) (ref j 1)))
      (define dz (fl- (ref i 2) (ref j 2)))
      (fl- e (fl/ (fl* m (ref j 6)) (flsqrt (fl+ (fl* dx dx) (fl+ (fl* dy dy) (fl* dz dz)))))))))

(define (advance! dt)
  (for ([i (in-range nb)])
    (for ([j (in-range (+ i 1) nb)])
      (define dx (fl- (ref i 0) (ref j 0)))
      (define dy (fl- (ref i 1) (ref j 1)))
      (define dz (fl- (ref i 2) (ref j 2)))
      (define d2 (fl+ (fl* dx dx) (fl+ (fl* dy dy) (fl* dz dz))))
      (define mag (fl/ dt (fl* d2 (flsqrt d2))))
      (define mi (fl* (ref i 6) mag))
      (define mj (fl* (ref j 6) mag))
      (set i 3 (fl- (ref i 3) (fl* dx mj)))
      (set i 4 (fl- (ref i 4) (fl* dy mj)))
      (set i 5 (fl- (ref i 5) (fl* dz mj)))
      (set j 3 (fl+ (ref j 3) (fl* dx mi)))
      (set j 4 (fl+ (ref j 4) (fl* dy mi)))
      (set j 5 (fl+ (ref j 5) (fl* dz mi)))))
  (for ([i (in-range nb)])
    (set i 0 (fl+ (ref i 0) (fl* dt (ref i 3))))
    (set i 1 (fl+ (ref i 1) (fl* dt (ref i 4))))
    (set i 2 (fl+ (ref i 2) (fl* dt (ref i 5))))))

(define n (string->number (vector-ref (current-command-line-arguments) 0)))
(offset-momentum!)
(printf "~a\n" (real->decimal-string (energy) 9))
(for ([_ (in-range n)]) (advance! 0.01))
(printf "~a\n" (real->decimal-string (energy) 9))
