; memarena barman domain (IPC 2011 barman semantics).
; A two-handed robot bartender fills shots with ingredients from dispensers and mixes
; cocktails in a shaker. A cocktail is made of two ingredients (part1 and part2).
(define (domain barman)
  (:requirements :strips :typing)
  (:types
    hand level beverage dispenser container - object
    ingredient cocktail - beverage
    shot shaker - container)
  (:predicates
    (ontable ?c - container)                     ; ?c stands on the table
    (holding ?h - hand ?c - container)           ; hand ?h holds ?c
    (handempty ?h - hand)                        ; hand ?h holds nothing
    (empty ?c - container)                       ; ?c contains nothing
    (contains ?c - container ?b - beverage)      ; ?c contains beverage ?b
    (clean ?c - container)                       ; ?c is clean
    (used ?c - container ?b - beverage)          ; ?c was used for ?b and is dirty
    (dispenses ?d - dispenser ?i - ingredient)   ; dispenser ?d gives ingredient ?i
    (shaker-empty-level ?s - shaker ?l - level)  ; ?l is the level of the empty shaker ?s
    (shaker-level ?s - shaker ?l - level)        ; shaker ?s is filled up to level ?l
    (next ?l1 - level ?l2 - level)               ; level ?l2 is one above level ?l1
    (unshaked ?s - shaker)                       ; shaker ?s holds unmixed ingredients
    (shaked ?s - shaker)                         ; shaker ?s holds a mixed cocktail
    (cocktail-part1 ?c - cocktail ?i - ingredient)
    (cocktail-part2 ?c - cocktail ?i - ingredient))

  ; take a container from the table with an empty hand
  (:action grasp
    :parameters (?h - hand ?c - container)
    :precondition (and (ontable ?c) (handempty ?h))
    :effect (and (not (ontable ?c)) (not (handempty ?h)) (holding ?h ?c)))

  ; put a held container back on the table
  (:action leave
    :parameters (?h - hand ?c - container)
    :precondition (holding ?h ?c)
    :effect (and (not (holding ?h ?c)) (handempty ?h) (ontable ?c)))

  ; fill a clean, empty shot from a dispenser (the other hand must be free)
  (:action fill-shot
    :parameters (?s - shot ?i - ingredient ?h1 - hand ?h2 - hand ?d - dispenser)
    :precondition (and (holding ?h1 ?s) (handempty ?h2) (dispenses ?d ?i)
                       (empty ?s) (clean ?s))
    :effect (and (not (empty ?s)) (contains ?s ?i) (not (clean ?s)) (used ?s ?i)))

  ; fill an empty shot again with the ingredient it was used for
  (:action refill-shot
    :parameters (?s - shot ?i - ingredient ?h1 - hand ?h2 - hand ?d - dispenser)
    :precondition (and (holding ?h1 ?s) (handempty ?h2) (dispenses ?d ?i)
                       (empty ?s) (used ?s ?i))
    :effect (and (not (empty ?s)) (contains ?s ?i)))

  ; pour away what a held shot contains
  (:action empty-shot
    :parameters (?h - hand ?p - shot ?b - beverage)
    :precondition (and (holding ?h ?p) (contains ?p ?b))
    :effect (and (not (contains ?p ?b)) (empty ?p)))

  ; clean an empty, used shot (the other hand must be free)
  (:action clean-shot
    :parameters (?s - shot ?b - beverage ?h1 - hand ?h2 - hand)
    :precondition (and (holding ?h1 ?s) (handempty ?h2) (empty ?s) (used ?s ?b))
    :effect (and (not (used ?s ?b)) (clean ?s)))

  ; pour an ingredient from a shot into a clean, empty shaker
  (:action pour-shot-to-clean-shaker
    :parameters (?s - shot ?i - ingredient ?d - shaker ?h1 - hand ?l - level ?l1 - level)
    :precondition (and (holding ?h1 ?s) (contains ?s ?i) (empty ?d) (clean ?d)
                       (shaker-level ?d ?l) (next ?l ?l1))
    :effect (and (not (contains ?s ?i)) (empty ?s) (contains ?d ?i)
                 (not (empty ?d)) (not (clean ?d)) (unshaked ?d)
                 (not (shaker-level ?d ?l)) (shaker-level ?d ?l1)))

  ; pour an ingredient from a shot into a shaker that already holds unmixed ingredients
  (:action pour-shot-to-used-shaker
    :parameters (?s - shot ?i - ingredient ?d - shaker ?h1 - hand ?l - level ?l1 - level)
    :precondition (and (holding ?h1 ?s) (contains ?s ?i) (unshaked ?d)
                       (shaker-level ?d ?l) (next ?l ?l1))
    :effect (and (not (contains ?s ?i)) (contains ?d ?i) (empty ?s)
                 (not (shaker-level ?d ?l)) (shaker-level ?d ?l1)))

  ; pour away the cocktail in a held shaker
  (:action empty-shaker
    :parameters (?h - hand ?s - shaker ?b - cocktail ?l - level ?l1 - level)
    :precondition (and (holding ?h ?s) (contains ?s ?b) (shaked ?s)
                       (shaker-level ?s ?l) (shaker-empty-level ?s ?l1))
    :effect (and (not (shaked ?s)) (not (shaker-level ?s ?l)) (shaker-level ?s ?l1)
                 (not (contains ?s ?b)) (empty ?s)))

  ; clean an empty, held shaker (the other hand must be free)
  (:action clean-shaker
    :parameters (?h1 - hand ?h2 - hand ?s - shaker)
    :precondition (and (holding ?h1 ?s) (handempty ?h2) (empty ?s))
    :effect (and (clean ?s)))

  ; mix the two ingredients of a cocktail in a held shaker (the other hand must be free)
  (:action shake
    :parameters (?b - cocktail ?d1 - ingredient ?d2 - ingredient ?s - shaker ?h1 - hand ?h2 - hand)
    :precondition (and (holding ?h1 ?s) (handempty ?h2)
                       (contains ?s ?d1) (contains ?s ?d2)
                       (cocktail-part1 ?b ?d1) (cocktail-part2 ?b ?d2) (unshaked ?s))
    :effect (and (not (unshaked ?s)) (not (contains ?s ?d1)) (not (contains ?s ?d2))
                 (shaked ?s) (contains ?s ?b)))

  ; pour the mixed cocktail from a held shaker into a clean, empty shot
  (:action pour-shaker-to-shot
    :parameters (?b - beverage ?d - shot ?h - hand ?s - shaker ?l - level ?l1 - level)
    :precondition (and (holding ?h ?s) (shaked ?s) (empty ?d) (clean ?d)
                       (contains ?s ?b) (shaker-level ?s ?l) (next ?l1 ?l))
    :effect (and (not (clean ?d)) (not (empty ?d)) (contains ?d ?b)
                 (shaker-level ?s ?l1) (not (shaker-level ?s ?l)))))
