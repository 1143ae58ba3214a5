//! Training losses over score matrices: score distillation (QABISAR's teacher → student step) and
//! the contrastive (InfoNCE) negative log-likelihood.
//!
//! Scores are `(b, n)`: one row per query, one column per candidate (the positive and its negatives,
//! or in-batch passages).

use candle_core::{D, Tensor};

use crate::error::{Error, Result};

fn check_scores(name: &str, scores: &Tensor) -> Result<(usize, usize)> {
    let dims = scores.dims2().map_err(|_| {
        Error::internal(format!(
            "{name} must be (batch, candidates), got {:?}",
            scores.dims()
        ))
    })?;
    if dims.0 == 0 || dims.1 == 0 {
        return Err(Error::internal(format!("{name} is empty: {:?}", scores.dims())));
    }
    Ok(dims)
}

/// `KL(softmax(teacher/τ) ‖ softmax(student/τ))`, summed over candidates and averaged over the batch
/// (PyTorch's `kl_div(log_softmax(student/τ), log_softmax(teacher/τ), log_target=True,
/// reduction="batchmean")`). The teacher's scores are detached: gradients reach the student only.
/// Not multiplied by `τ²` (Hinton et al.'s gradient scaling is the caller's choice).
pub fn kl_distillation(student: &Tensor, teacher: &Tensor, temperature: f64) -> Result<Tensor> {
    if !(temperature.is_finite() && temperature > 0.0) {
        return Err(Error::Param(format!(
            "distillation temperature {temperature} must be positive and finite"
        )));
    }
    let sd = check_scores("student scores", student)?;
    let td = check_scores("teacher scores", teacher)?;
    if sd != td {
        return Err(Error::internal(format!(
            "student scores {sd:?} and teacher scores {td:?} differ in shape"
        )));
    }
    let teacher = teacher.detach().to_dtype(student.dtype())?;
    let log_t = candle_nn::ops::log_softmax(&(teacher / temperature)?, D::Minus1)?;
    let log_s = candle_nn::ops::log_softmax(&(student / temperature)?, D::Minus1)?;
    let kl = (log_t.exp()? * (&log_t - log_s)?)?.sum(D::Minus1)?;
    Ok(kl.mean(0)?)
}

/// The contrastive loss `−log softmax(scores)[i, positives[i]]`, averaged over the `b` rows (InfoNCE
/// with the scores as logits; PyTorch's `cross_entropy(scores, positives)`).
pub fn contrastive_nll(scores: &Tensor, positives: &[u32]) -> Result<Tensor> {
    let (b, n) = check_scores("scores", scores)?;
    if positives.len() != b {
        return Err(Error::internal(format!(
            "{} positive indices for {b} rows of scores",
            positives.len()
        )));
    }
    if let Some(&bad) = positives.iter().find(|&&p| p as usize >= n) {
        return Err(Error::internal(format!(
            "positive index {bad} is out of range for {n} candidates"
        )));
    }
    let log_p = candle_nn::ops::log_softmax(scores, D::Minus1)?;
    let idx = Tensor::from_slice(positives, (b, 1), scores.device())?;
    let picked = log_p.gather(&idx, 1)?.squeeze(1)?;
    Ok(picked.mean(0)?.neg()?)
}

#[cfg(test)]
mod tests {
    //! Properties checked:
    //! - KD loss on a hand example (τ = 1 and τ = 2) and 0 for identical score rows, averaged over the
    //!   batch;
    //! - the KD gradient reaches only the student: a student and a teacher linear scorer from separate
    //!   `VarMap`s, `loss.backward()` gives non-zero gradients to the student's variables and none to
    //!   the teacher's;
    //! - the contrastive NLL on a hand example and its gradient `softmax − one-hot`;
    //! - a bad temperature is `Error::Param`; bad shapes and positive indices (our own tensors) are
    //!   `Error::Internal`.
    use candle_core::{DType, Device, Tensor};
    use candle_nn::{Init, VarBuilder, VarMap};

    use super::*;

    type R = std::result::Result<(), Box<dyn std::error::Error>>;

    fn scalar(t: &Tensor) -> f32 {
        t.to_scalar::<f32>().expect("scalar")
    }

    #[test]
    fn kd_hand_example() -> R {
        // Row 0: teacher [3,2,1], student [1,2,3], τ = 1.
        // p_t = softmax([3,2,1]) = [0.6652410, 0.2447285, 0.0900306];
        // log p_t = [3,2,1] − 3.4076060 = [−0.4076060, −1.4076060, −2.4076060];
        // log p_s = [1,2,3] − 3.4076060 = [−2.4076060, −1.4076060, −0.4076060];
        // KL = 0.6652410·2 + 0.2447285·0 + 0.0900306·(−2) = 1.1504208.
        // Row 1: identical scores, KL = 0. Batch mean: 0.5752104.
        let dev = Device::Cpu;
        let student = Tensor::new(&[[1f32, 2.0, 3.0], [0.5, -1.0, 2.0]], &dev)?;
        let teacher = Tensor::new(&[[3f32, 2.0, 1.0], [0.5, -1.0, 2.0]], &dev)?;
        let kl = kl_distillation(&student, &teacher, 1.0)?;
        assert!((scalar(&kl) - 0.575_210_4).abs() < 1e-6, "{}", scalar(&kl));
        // τ = 2 (numpy): row 0 gives 0.3201567.
        let kl = kl_distillation(&student.narrow(0, 0, 1)?, &teacher.narrow(0, 0, 1)?, 2.0)?;
        assert!((scalar(&kl) - 0.320_156_7).abs() < 1e-6, "{}", scalar(&kl));
        Ok(())
    }

    #[test]
    fn kd_gradient_reaches_only_the_student() -> R {
        let dev = Device::Cpu;
        let (student_vars, teacher_vars) = (VarMap::new(), VarMap::new());
        let linear = |vars: &VarMap| -> crate::Result<Tensor> {
            let vb = VarBuilder::from_varmap(vars, DType::F32, &dev);
            Ok(vb.get_with_hints(
                (4, 3),
                "proj.weight",
                Init::Randn {
                    mean: 0.0,
                    stdev: 1.0,
                },
            )?)
        };
        let (ws, wt) = (linear(&student_vars)?, linear(&teacher_vars)?);
        // Queries (2, 4) and candidates (5, 4): scores = (q W)(c W)ᵀ for each model.
        let q = Tensor::randn(0f32, 1.0, (2, 4), &dev)?;
        let c = Tensor::randn(0f32, 1.0, (5, 4), &dev)?;
        let scores = |w: &Tensor| -> crate::Result<Tensor> { Ok(q.matmul(w)?.matmul(&c.matmul(w)?.t()?)?) };
        let loss = kl_distillation(&scores(&ws)?, &scores(&wt)?, 2.0)?;
        let grads = loss.backward()?;
        for (name, var) in student_vars.data().lock().expect("vars").iter() {
            let g = grads
                .get(var.as_tensor())
                .ok_or_else(|| format!("student {name} has no gradient"))?;
            assert!(
                scalar(&g.abs()?.sum_all()?) > 0.0,
                "student {name}: zero gradient"
            );
        }
        for (name, var) in teacher_vars.data().lock().expect("vars").iter() {
            let g = grads.get(var.as_tensor());
            let zero = g.is_none_or(|g| {
                g.abs()
                    .and_then(|a| a.sum_all())
                    .map(|s| scalar(&s))
                    .unwrap_or(1.0)
                    == 0.0
            });
            assert!(zero, "teacher {name} received a gradient");
        }
        Ok(())
    }

    #[test]
    fn contrastive_hand_example_and_gradient() -> R {
        // Row 0: −log softmax([1,2,3])[2] = 3.4076060 − 3 = 0.4076060; row 1: −log ½ = 0.6931472.
        let dev = Device::Cpu;
        let var = candle_core::Var::from_tensor(&Tensor::new(&[[1f32, 2.0, 3.0], [0.0, 0.0, -1e4]], &dev)?)?;
        let loss = contrastive_nll(var.as_tensor(), &[2, 0])?;
        assert!((scalar(&loss) - (0.407_606 + std::f32::consts::LN_2) / 2.0).abs() < 1e-6);
        // d loss / d scores = (softmax − one-hot) / b.
        let g = loss
            .backward()?
            .get(var.as_tensor())
            .ok_or("no gradient")?
            .to_vec2::<f32>()?;
        let want = [
            (0.090_030_6 / 2.0, 0.244_728_5 / 2.0, (0.665_241 - 1.0) / 2.0),
            (-0.25, 0.25, 0.0),
        ];
        for (row, w) in g.iter().zip(want) {
            for (a, b) in row.iter().zip([w.0, w.1, w.2]) {
                assert!((a - b).abs() < 1e-6, "{g:?}");
            }
        }
        Ok(())
    }

    #[test]
    fn bad_inputs() -> R {
        let dev = Device::Cpu;
        let s = Tensor::zeros((2, 3), DType::F32, &dev)?;
        let bad = [
            kl_distillation(&s, &Tensor::zeros((2, 4), DType::F32, &dev)?, 1.0),
            kl_distillation(&Tensor::zeros(3, DType::F32, &dev)?, &s, 1.0),
            contrastive_nll(&s, &[0]),
            contrastive_nll(&s, &[0, 3]),
            contrastive_nll(&Tensor::zeros((0, 3), DType::F32, &dev)?, &[]),
        ];
        for r in bad {
            assert!(matches!(r, Err(Error::Internal(_))), "{r:?}");
        }
        for t in [0.0, f64::NAN] {
            let r = kl_distillation(&s, &s, t);
            assert!(matches!(r, Err(Error::Param(_))), "{r:?}");
        }
        Ok(())
    }
}
