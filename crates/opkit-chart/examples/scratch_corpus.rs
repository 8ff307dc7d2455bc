fn main() {
    let root = std::path::Path::new("/work/shared/corpus/helm");
    for name in std::env::args().skip(1) {
        let chart = opkit_chart::Chart::load(&root.join("charts").join(&name)).unwrap();
        let values = chart.values.clone();
        let opts = opkit_chart::TemplateOptions {
            release_name: "rel".into(),
            ..Default::default()
        };
        match opkit_chart::template(&opkit_chart::Engine::new(), &chart, &values, &opts) {
            Ok(out) => {
                let want =
                    std::fs::read_to_string(root.join("golden").join(format!("{name}.yaml")))
                        .unwrap();
                if out == want {
                    println!("{name}: identical");
                    continue;
                }
                let l = out.lines().zip(want.lines()).position(|(a, b)| a != b);
                println!(
                    "{name}: differs at line {:?}\n helm:  {:?}\n opkit: {:?}",
                    l.map(|x| x + 1),
                    l.and_then(|l| want.lines().nth(l)),
                    l.and_then(|l| out.lines().nth(l))
                );
            }
            Err(e) => println!(
                "{name}: error {}",
                &e.to_string()[..e.to_string().len().min(600)]
            ),
        }
    }
}
